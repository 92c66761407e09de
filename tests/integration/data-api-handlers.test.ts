import type { FauxqsServer } from 'fauxqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as getData } from '../../functions/data-api/getData.js';
import { handler as getDataPaginate } from '../../functions/data-api/getDataPaginate.js';
import { handler as getDataWithCondition } from '../../functions/data-api/getDataWithCondition.js';
import { handler as getRowsCount } from '../../functions/data-api/getRowsCount.js';
import { startAwsEmulator } from '../../infra/local/aws-emulator.js';
import { createEmbeddedDatabase } from '../../shared/adapters/embedded/index.js';
import { registerEmbeddedDatabase } from '../../shared/config/databases.js';
import { setTenantRegistry } from '../../shared/config/tenant-registry.js';
import { parseTenantRegistry } from '../../shared/config/tenants.js';
import { DEMO_AUTH, demoDatabase } from '../support/demo.js';
import { httpApiEvent, invokeHttp as invoke } from '../support/http-api-event.js';

const HASH = 'scrypt$16384$8$1$ZGVtby10ZW5hbnQtc2FsdA==$x2bp48ourmNi7AJz+st/kNLkTjPJ/XnX7NIpiDrZ8ig=';
const user = [{ name: 'demo', passwordHash: HASH }];

const event = (tenant: string, fn: string, dataSource: string, query?: string) =>
  httpApiEvent({
    method: 'GET',
    route: `/{tenant}/JsonAPI/Data/${fn}/{dataSource}`,
    pathParameters: { tenant, dataSource },
    headers: { authorization: DEMO_AUTH },
    query,
  });

const BUCKET = 'data-api-handlers';
let closePg: () => Promise<void>;
let exec: (sql: string) => Promise<unknown>;
let catalogueLookups = 0;
let emulator: FauxqsServer | undefined;

beforeAll(async () => {
  ({ emulator } = await startAwsEmulator({ bucket: BUCKET }));
  const { pg, db } = await demoDatabase();
  closePg = () => pg.close();
  exec = (sql) => pg.exec(sql);
  // Rows whose JSON is quotes: under 5 MB as an answer, about twice that escaped in a Lambda response.
  await pg.exec(`CREATE TABLE dbo."QUOTES" ("ID" int PRIMARY KEY, "T" text NOT NULL);
    INSERT INTO dbo."QUOTES" SELECT g, repeat('"', 1000) FROM generate_series(1, 2400) AS g;`);
  // The real database, with its catalogue lookups counted.
  registerEmbeddedDatabase('handlers-demo', {
    ...db,
    findDataSource: (schema, name) => {
      catalogueLookups++;
      return db.findDataSource(schema, name);
    },
  });
  const { pg: gone } = await demoDatabase();
  await gone.close();
  registerEmbeddedDatabase('handlers-gone', createEmbeddedDatabase(gone));
  setTenantRegistry(
    parseTenantRegistry({
      // The deployment's signing key of cursors (a secret of its own in the registry).
      pagingCursorKeys: ['handlers-test-signing-key-of-32-chars'],
      tenants: {
        alpha: {
          database: { kind: 'embedded', name: 'handlers-demo' },
          dataApiUsers: user,
          dataSources: ['SUBJECT', 'QUOTES', 'SHIFTING'],
        },
        beta: {
          database: { kind: 'embedded', name: 'handlers-demo' },
          dataApiUsers: user,
          dataSources: ['SUBJECT', 'QUOTES'],
          hiddenColumns: { subject: ['secret_webhook', 'ICO'] },
        },
        down: { database: { kind: 'embedded', name: 'handlers-gone' }, dataApiUsers: user, dataSources: '*' },
      },
    }),
  );
});
afterAll(async () => {
  setTenantRegistry(undefined);
  await closePg?.();
  await emulator?.stop();
});

describe('Data API Lambda handlers', () => {
  it('answer an HTTP API event with the JSON body and the request id in errors', async () => {
    const ok = await invoke(getRowsCount, event('alpha', 'getRowsCount', 'SUBJECT'));
    expect(ok.statusCode).toBe(200);
    expect(JSON.parse(ok.body!)).toEqual({ SUBJECT: [{ rowsCount: 60 }] });
    const denied = await invoke(getData, event('alpha', 'getData', 'UCET'));
    expect(denied.statusCode).toBe(404);
    expect(JSON.parse(denied.body!)).toEqual({
      error: {
        code: 'data_source_not_found',
        message: expect.stringContaining('UCET'),
        requestId: 'aws-test-request',
      },
    });
  });

  it('name the request in x-request-id on every answer, success or error', async () => {
    const answers = [
      await invoke(getRowsCount, event('alpha', 'getRowsCount', 'SUBJECT')),
      await invoke(getDataPaginate, event('alpha', 'getDataPaginate', 'SUBJECT', 'fromRow=1&rows=2')),
      await invoke(getDataWithCondition, event('alpha', 'getDataWithCondition', 'SUBJECT', 'condition=1%3B')),
      await invoke(getData, event('alpha', 'getData', 'UCET')),
      await invoke(getData, { ...event('alpha', 'getData', 'SUBJECT'), headers: {} }),
      await invoke(getData, event('down', 'getData', 'SUBJECT')),
    ];
    expect(answers.map((answer) => answer.statusCode)).toEqual([200, 200, 400, 404, 401, 503]);
    for (const answer of answers) expect(answer.headers?.['x-request-id']).toBe('aws-test-request');
  });

  it('look a table up in the catalogue once per warm process, not on every request', async () => {
    // Each request wraps the database anew with its own cancellation signal; the catalogue
    // memory belongs to the database, not to the wrapper.
    const before = catalogueLookups;
    for (let i = 0; i < 3; i++) {
      const response = await invoke(getRowsCount, event('alpha', 'getRowsCount', 'QUOTES'));
      expect(response.statusCode).toBe(200);
    }
    expect(catalogueLookups - before).toBe(1);
  });

  it('answer a table as it is now when it changed after its columns were remembered', async () => {
    await exec(`CREATE TABLE dbo."SHIFTING" ("ID" int PRIMARY KEY, "A" text, "B" text);
      INSERT INTO dbo."SHIFTING" VALUES (1, 'a1', 'b1'), (2, 'a2', 'b2');`);
    const body = async (handler: typeof getData, fn: string, query?: string) => {
      const response = await invoke(handler, event('alpha', fn, 'SHIFTING', query));
      return { status: response.statusCode, body: JSON.parse(response.body!) as Record<string, unknown> };
    };
    expect(await body(getData, 'getData')).toEqual({
      status: 200,
      body: {
        SHIFTING: [
          { ID: 1, A: 'a1', B: 'b1' },
          { ID: 2, A: 'a2', B: 'b2' },
        ],
      },
    });
    // Remembered with A and B; B goes, A is renamed: every read answers the table as it is now.
    await exec(
      `ALTER TABLE dbo."SHIFTING" DROP COLUMN "B"; ALTER TABLE dbo."SHIFTING" RENAME COLUMN "A" TO "C";`,
    );
    expect(await body(getData, 'getData')).toEqual({
      status: 200,
      body: {
        SHIFTING: [
          { ID: 1, C: 'a1' },
          { ID: 2, C: 'a2' },
        ],
      },
    });
    await exec(`ALTER TABLE dbo."SHIFTING" ADD COLUMN "D" int; ALTER TABLE dbo."SHIFTING" DROP COLUMN "C";`);
    expect(await body(getDataPaginate, 'getDataPaginate', 'fromRow=2&rows=5')).toEqual({
      status: 200,
      body: { SHIFTING: [{ ID: 2 }] },
    });
    // A condition on a column that is gone: refused as naming no column, not a database failure.
    await exec(`ALTER TABLE dbo."SHIFTING" RENAME COLUMN "D" TO "E";`);
    const gone = await body(
      getDataWithCondition,
      'getDataWithCondition',
      `condition=${encodeURIComponent('D = 1')}`,
    );
    expect(gone.status).toBe(400);
    expect(JSON.stringify(gone.body)).toMatch(/invalid_condition.*\bD\b/);
    await exec(`ALTER TABLE dbo."SHIFTING" RENAME COLUMN "E" TO "F";`);
    expect(
      await body(getDataWithCondition, 'getDataWithCondition', `condition=${encodeURIComponent('ID = 1')}`),
    ).toEqual({
      status: 200,
      body: { SHIFTING: [{ ID: 1 }] },
    });
    await exec(`DROP TABLE dbo."SHIFTING";`);
    expect((await body(getRowsCount, 'getRowsCount')).status).toBe(404);
    expect((await body(getData, 'getData')).status).toBe(404);
  });

  it('keep tenants apart: one tenant cannot read what another allows', async () => {
    const response = await invoke(getData, event('alpha', 'getData', 'DOKUMENT'));
    expect(response.statusCode).toBe(404);
  });

  it('send an answer under 5 MB through S3 when, escaped, it would not fit a Lambda response', async () => {
    const response = await invoke(getData, event('alpha', 'getData', 'QUOTES'));
    // Lambda refuses a response over 6 MB, counted as JSON, and API Gateway would answer 5xx.
    expect(Buffer.byteLength(JSON.stringify(response))).toBeLessThanOrEqual(6 * 1024 * 1024);
    expect(response.statusCode).toBe(303);
    const stored = await fetch(String(response.headers?.location));
    const text = await stored.text();
    expect(Buffer.byteLength(text)).toBeLessThan(5 * 1024 * 1024);
    const body = JSON.parse(text) as { QUOTES: { ID: number; T: string }[] };
    expect(body.QUOTES).toHaveLength(2400);
    expect(body.QUOTES[0]!.T).toBe('"'.repeat(1000));
  });

  it('answer 503 without internals when the database is unreachable', async () => {
    const response = await invoke(getData, event('down', 'getData', 'SUBJECT'));
    expect(response.statusCode).toBe(503);
    const body = JSON.parse(response.body!) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('database_unavailable');
    expect(response.body).not.toMatch(/PGlite|closed|stack|at /);
  });

  it('binds a cursor to its tenant: one of another tenant on the same database and source is 400 invalid_cursor', async () => {
    const page = await invoke(
      getDataPaginate,
      event('alpha', 'getDataPaginate', 'SUBJECT', 'fromRow=1&rows=5'),
    );
    const link = String(page.headers?.link ?? '');
    expect(link).toMatch(
      /^<\/alpha\/JsonAPI\/Data\/getDataPaginate\/SUBJECT\?after=[^&>]+&rows=5>; rel="next"$/,
    );
    const after = new URLSearchParams(link.slice(link.indexOf('?') + 1, link.indexOf('>'))).get('after')!;
    const own = await invoke(
      getDataPaginate,
      event('alpha', 'getDataPaginate', 'SUBJECT', `after=${after}&rows=5`),
    );
    expect(own.statusCode).toBe(200);
    expect((JSON.parse(own.body!) as { SUBJECT: { ID: number }[] }).SUBJECT.map((r) => r.ID)).toEqual([
      6, 7, 8, 9, 10,
    ]);
    const other = await invoke(
      getDataPaginate,
      event('beta', 'getDataPaginate', 'SUBJECT', `after=${after}&rows=5`),
    );
    expect(other.statusCode).toBe(400);
    expect(JSON.parse(other.body!).error.code).toBe('invalid_cursor');
  });

  it("keeps each tenant's hidden columns to that tenant", async () => {
    const alpha = JSON.parse((await invoke(getData, event('alpha', 'getData', 'SUBJECT'))).body!) as {
      SUBJECT: Record<string, unknown>[];
    };
    const beta = JSON.parse((await invoke(getData, event('beta', 'getData', 'SUBJECT'))).body!) as {
      SUBJECT: Record<string, unknown>[];
    };
    expect(alpha.SUBJECT[0]).toHaveProperty('SECRET_WEBHOOK');
    expect(alpha.SUBJECT[0]).toHaveProperty('ICO');
    expect(beta.SUBJECT[0]).not.toHaveProperty('SECRET_WEBHOOK');
    expect(beta.SUBJECT[0]).not.toHaveProperty('ICO');
    expect(Object.keys(beta.SUBJECT[0]!).sort()).toEqual(
      Object.keys(alpha.SUBJECT[0]!)
        .filter((k) => k !== 'SECRET_WEBHOOK' && k !== 'ICO')
        .sort(),
    );
  });

  it('gives a 303 no ETag, and a large page its Link all the same', async () => {
    const stored = await invoke(
      getDataPaginate,
      event('alpha', 'getDataPaginate', 'QUOTES', 'fromRow=1&rows=2400'),
    );
    expect(stored.statusCode).toBe(303);
    expect(stored.headers?.etag).toBeUndefined();
    const full = await invoke(
      getDataPaginate,
      event('alpha', 'getDataPaginate', 'QUOTES', 'fromRow=1&rows=2300'),
    );
    expect(full.statusCode).toBe(303);
    expect(String(full.headers?.link)).toMatch(/after=/);
  });
});
