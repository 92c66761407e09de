import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { checkErpObjects, ERP_OBJECTS, erpObjectsTable } from '../../shared/adapters/mssql/erp-objects.js';
import type { Row } from '../../shared/core/database.js';

/** A catalogue of `tables` (name → column → DATA_TYPE), answering the check's one query. */
function catalogue(tables: Record<string, Record<string, string>>) {
  const asked: unknown[][] = [];
  return {
    asked,
    db: {
      async query(_sql: string, params: unknown[] = []): Promise<Row[]> {
        asked.push(params);
        const name = String(params[1]).toUpperCase();
        const columns = tables[name];
        if (!columns) return [];
        return Object.entries(columns).map(([column, type]) => ({
          schema: 'dbo',
          name,
          kind: 'BASE TABLE',
          column,
          type,
        }));
      },
    },
  };
}

const complete = () =>
  Object.fromEntries(
    ERP_OBJECTS.filter((object) => object.owner === 'erp' && !object.onlyWith).map((object) => [
      object.object.split('.')[1]!,
      Object.fromEntries(object.columns.map((column) => [column.name, column.types[0]!])),
    ]),
  );

describe('Function: checkErpObjects', () => {
  it("finds nothing wrong when the ERP's objects have what the service needs, and the service's own may be missing", async () => {
    const { db } = catalogue(complete());
    expect((await checkErpObjects(db, { demo: false })).problems).toEqual([]);
  });

  it('names each missing table, missing column and column of another type', async () => {
    const tables = complete();
    delete tables.SUBJECT;
    delete tables.SVCDOC!.FILENAME;
    tables.SVCDOC!.SIZE_BYTES = 'nvarchar';
    const { problems } = await checkErpObjects(catalogue(tables).db, { demo: false });
    expect(problems.map((p) => `${p.object}${p.column ? `.${p.column}` : ''}`)).toEqual([
      'dbo.SVCDOC.FILENAME',
      'dbo.SVCDOC.SIZE_BYTES',
      'dbo.SUBJECT',
    ]);
    expect(problems[1]!.problem).toMatch(/^is nvarchar, the service needs int/);
  });

  it("needs no register of applications (a real ERP's database has none); WS_APPLICATION only with --erp-applications", async () => {
    const { db, asked } = catalogue(complete());
    expect((await checkErpObjects(db, { demo: false })).problems).toEqual([]);
    expect(asked.map((params) => params[1])).not.toContain('WS_APPLICATION');
    const { problems } = await checkErpObjects(db, { demo: false, erpApplications: true });
    expect(problems).toEqual([
      {
        object: 'dbo.WS_APPLICATION',
        problem: expect.stringMatching(
          /^table is missing \(used by the Web API of a tenant whose registry names the ERP's register/,
        ),
      },
    ]);
    const register = {
      ...complete(),
      WS_APPLICATION: { ID: 'int', API_KEY: 'nvarchar', API_HASH: 'int', AKTIVNI: 'bit' },
    };
    const checked = await checkErpObjects(catalogue(register).db, {
      demo: false,
      erpApplications: true,
      only: ['dbo.WS_APPLICATION'],
    });
    expect(checked.problems.map((p) => `${p.object}.${p.column}: ${p.problem}`)).toEqual([
      'dbo.WS_APPLICATION.API_HASH: is int, the service needs nvarchar or varchar or nchar or char or ntext or text',
    ]);
  });

  it('checks a WS_JOURNAL the ERP already has against the columns the service writes', async () => {
    const tables: Record<string, Record<string, string>> = {
      ...complete(),
      WS_JOURNAL: { ID: 'int', VLTYP: 'int' },
    };
    const { problems } = await checkErpObjects(catalogue(tables).db, { demo: false });
    expect(problems.map((p) => p.column)).toEqual(expect.arrayContaining(['LEASE_UNTIL', 'STATE', 'ANSWER']));
  });

  it('with --demo a missing ERP table is laid out, not a problem; with --documents-elsewhere SVCDOC is not looked for', async () => {
    expect((await checkErpObjects(catalogue({}).db, { demo: true })).problems).toEqual([]);
    const tables = complete();
    delete tables.SVCDOC;
    const { db, asked } = catalogue(tables);
    expect((await checkErpObjects(db, { demo: false, documentsElsewhere: true })).problems).toEqual([]);
    expect(asked.map((params) => params[1])).not.toContain('SVCDOC');
  });
});

describe('docs/sql-server.md, "What the ERP owns and what the service owns"', () => {
  it('prints exactly the list db:apply checks', () => {
    const text = readFileSync('docs/sql-server.md', 'utf8');
    const section =
      /<!-- erp-objects:[^>]*-->\n\| object[^\n]*\n\|---[^\n]*\n([\s\S]*?)\n<!-- \/erp-objects -->/.exec(
        text,
      );
    expect(section?.[1]?.split('\n')).toEqual(erpObjectsTable());
  });
});
