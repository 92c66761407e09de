/**
 * CONTRACT 4a through the local stack, on the demo tenant's database (embedded here; the T-SQL
 * engine under `npm run test:tsql`): `columns=`, hidden columns, ETag/304, keyset continuation
 * and the per-tenant description with a client generated from it.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, localSigningKey, startLocalStack } from '../../infra/local/stack.js';
import { mintCursor } from '../support/cursors.js';
import { DEMO_AUTH } from '../support/demo.js';
import { politeFetch } from '../support/polite-fetch.js';
import { redoclyProblemsOf } from '../support/redocly-lint.js';

let stack: LocalStack;
// Retries a 429 after its Retry-After: this suite's walks send faster than the tenant's rate on a fast machine.
const get = (path: string, headers: Record<string, string> = {}) =>
  politeFetch(`${stack.url}${path}`, {
    headers: { authorization: DEMO_AUTH, ...headers },
    redirect: 'manual',
  });
const data = (fn: string, source: string, query = '', headers: Record<string, string> = {}) =>
  get(`/demo/JsonAPI/Data/${fn}/${source}${query ? `?${query}` : ''}`, headers);
type Records = Record<string, Record<string, unknown>[]>;
const errorOf = async (response: Response) =>
  ((await response.json()) as { error: { code: string; message: string } }).error;
/** The target of a `Link: <…>; rel="next"`, or undefined. */
const nextLink = (response: Response) =>
  /^<([^>]+)>; rel="next"$/.exec(response.headers.get('link') ?? '')?.[1];

// Tables of this file's own, so that rows can be added and removed while paging.
const suffix = randomBytes(4).toString('hex').toUpperCase();
const KEYED = `I20_KEYED_${suffix}`;
const PAIRS = `I20_PAIRS_${suffix}`;
const run = (sql: string) => stack.database.query(sql);

beforeAll(async () => {
  stack = await startLocalStack({ port: 0 });
  await run(`CREATE TABLE dbo."${KEYED}" ("ID" int NOT NULL PRIMARY KEY, "T" varchar(20) NULL)`);
  await run(
    `INSERT INTO dbo."${KEYED}" ("ID", "T") VALUES ${[...Array(20)].map((_, i) => `(${(i + 1) * 10}, 't${i}')`).join(', ')}`,
  );
  await run(
    `CREATE TABLE dbo."${PAIRS}" ("A" int NOT NULL, "B" varchar(10) NOT NULL, "V" int NULL, CONSTRAINT "PK_${PAIRS}" PRIMARY KEY ("A", "B"))`,
  );
  const pairs = [1, 2, 3].flatMap((a) =>
    ['x', 'y', 'z', 'zz'].map((b, i) => `(${a}, '${b}', ${a * 10 + i})`),
  );
  await run(`INSERT INTO dbo."${PAIRS}" ("A", "B", "V") VALUES ${pairs.join(', ')}`);
  // As the ERP's administrator does for a table the service is to serve, when its login holds only
  // the service's role (npm run test:least-privilege).
  if (stack.serviceRole) await run(`GRANT SELECT ON dbo."${KEYED}" TO ${stack.serviceRole}`);
  if (stack.serviceRole) await run(`GRANT SELECT ON dbo."${PAIRS}" TO ${stack.serviceRole}`);
});
afterAll(async () => {
  await run(`DROP TABLE dbo."${KEYED}"`).catch(() => undefined);
  await run(`DROP TABLE dbo."${PAIRS}"`).catch(() => undefined);
  await stack?.stop();
});

describe('columns=', () => {
  it('gives only the chosen columns, spelled as in the catalogue, bare or [..], any case; rows and order unchanged', async () => {
    const all = (await (await data('getData', 'SUBJECT')).json()) as Records;
    const response = await data('getData', 'SUBJECT', 'columns=id,[nazev],Webhook_Url');
    expect(response.status).toBe(200);
    const chosen = (await response.json()) as Records;
    expect(chosen.SUBJECT!.map((r) => r.ID)).toEqual(all.SUBJECT!.map((r) => r.ID));
    for (const [index, record] of chosen.SUBJECT!.entries()) {
      const full = all.SUBJECT![index]!;
      // A NULL is still left out.
      const expected = Object.fromEntries(
        ['ID', 'NAZEV', 'WEBHOOK_URL'].filter((k) => k in full).map((k) => [k, full[k]]),
      );
      expect(record).toEqual(expected);
    }
    expect(chosen.SUBJECT!.some((r) => !('WEBHOOK_URL' in r))).toBe(true);
  });

  it('works on getDataWithCondition (the condition may test other columns) and getDataPaginate', async () => {
    const condition = encodeURIComponent('ID <= 3');
    const filtered = (await (
      await data('getDataWithCondition', 'SUBJECT', `condition=${condition}&columns=NAZEV`)
    ).json()) as Records;
    expect(filtered.SUBJECT).toHaveLength(3);
    for (const record of filtered.SUBJECT!) expect(Object.keys(record)).toEqual(['NAZEV']);
    const page = (await (
      await data('getDataPaginate', 'DOKUMENT', 'fromRow=11&rows=5&columns=CISLO')
    ).json()) as Records;
    const full = (await (await data('getDataPaginate', 'DOKUMENT', 'fromRow=11&rows=5')).json()) as Records;
    expect(page.DOKUMENT).toEqual(full.DOKUMENT!.map((r) => ({ CISLO: r.CISLO })));
  });

  it.each([
    ['an unknown column', 'ID,NOPE', 'NOPE'],
    ['a hidden column', 'ID,SECRET_WEBHOOK', 'SECRET_WEBHOOK'],
    ['an empty item', 'ID,,NAZEV', 'empty'],
    ['a name given twice', 'ID,nazev,NAZEV', 'twice'],
  ])('refuses %s with 400 invalid_columns naming it', async (_case, columns, named) => {
    for (const fn of ['getData', 'getDataPaginate', 'getDataWithCondition']) {
      const query = `columns=${columns}&fromRow=1&rows=5&condition=ID%3D1`;
      const response = await data(fn, 'SUBJECT', query);
      expect(response.status, fn).toBe(400);
      const error = await errorOf(response);
      expect(error.code).toBe('invalid_columns');
      expect(error.message).toContain(named);
    }
  });
});

describe('hidden columns (the demo tenant hides SUBJECT.SECRET_WEBHOOK)', () => {
  it('are absent from every answer; counts are unchanged', async () => {
    for (const [fn, query] of [
      ['getData', ''],
      ['getDataPaginate', 'fromRow=1&rows=100'],
      ['getDataWithCondition', 'condition=ID%3E0'],
    ] as const) {
      const body = (await (await data(fn, 'subject', query)).json()) as Records;
      expect(body.subject!.length, fn).toBe(60);
      for (const record of body.subject!) expect(record, fn).not.toHaveProperty('SECRET_WEBHOOK');
    }
    expect(await (await data('getRowsCount', 'SUBJECT')).json()).toEqual({ SUBJECT: [{ rowsCount: 60 }] });
  });

  it('in a condition, answer exactly as a column that does not exist', async () => {
    const named = async (column: string) =>
      (
        await data('getDataWithCondition', 'SUBJECT', `condition=${encodeURIComponent(`${column} = 'x'`)}`)
      ).json();
    const hidden = (await named('SECRET_WEBHOOK')) as { error: { code: string; message: string } };
    const unknown = (await named('SECRET_WEBHOOQ')) as { error: { code: string; message: string } };
    expect(hidden.error.code).toBe('invalid_condition');
    expect(hidden.error.message.replace('SECRET_WEBHOOK', 'X')).toBe(
      unknown.error.message.replace('SECRET_WEBHOOQ', 'X'),
    );
  });
});

describe('conditional reads', () => {
  const reads = [
    ['getData', 'SUBJECT', ''],
    ['getDataWithCondition', 'SUBJECT', 'condition=ID%3C5'],
    ['getRowsCount', 'DOKUMENT', ''],
    ['getDataPaginate', 'DOKUMENT', 'fromRow=1&rows=50'],
  ] as const;

  it.each(reads)(
    '%s carries a strong ETag and Cache-Control: private, no-cache; If-None-Match with it is a 304',
    async (fn, source, query) => {
      const first = await data(fn, source, query);
      expect(first.status).toBe(200);
      const etag = first.headers.get('etag')!;
      expect(etag).toMatch(/^"[^"]+"$/);
      expect(first.headers.get('cache-control')).toBe('private, no-cache');
      const again = await data(fn, source, query);
      expect(again.headers.get('etag')).toBe(etag);
      for (const header of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
        const cached = await data(fn, source, query, { 'if-none-match': header });
        expect(cached.status, header).toBe(304);
        expect(cached.headers.get('etag')).toBe(etag);
        expect(await cached.text()).toBe('');
      }
      const stale = await data(fn, source, query, { 'if-none-match': '"not-this-one"' });
      expect(stale.status).toBe(200);
      expect((await stale.text()).length).toBeGreaterThan(0);
    },
  );

  it('the tag changes whenever the body would', async () => {
    const tag = async (query: string) => (await data('getDataPaginate', KEYED, query)).headers.get('etag');
    const before = await tag('fromRow=1&rows=5');
    expect(await tag('fromRow=1&rows=4')).not.toBe(before);
    expect(await tag('fromRow=1&rows=5&columns=ID')).not.toBe(before);
    await run(`UPDATE dbo."${KEYED}" SET "T" = 'changed' WHERE "ID" = 10`);
    try {
      expect(await tag('fromRow=1&rows=5')).not.toBe(before);
    } finally {
      await run(`UPDATE dbo."${KEYED}" SET "T" = 't0' WHERE "ID" = 10`);
    }
    expect(await tag('fromRow=1&rows=5')).toBe(before);
  });
});

describe('keyset continuation', () => {
  /** Follows the next links from `first`, returning every page's rows. */
  async function follow(first: string, onPage?: (page: number) => Promise<void>) {
    const pages: Record<string, unknown>[][] = [];
    let path: string | undefined = first;
    while (path) {
      const response = await get(path);
      expect(response.status).toBe(200);
      const body = (await response.json()) as Records;
      const rows = Object.values(body)[0]!;
      pages.push(rows);
      path = nextLink(response);
      if (path) expect(path).toMatch(/[?&]after=[^&]+/);
      await onPage?.(pages.length);
      expect(pages.length).toBeLessThan(100);
    }
    return pages;
  }

  it('links a full page to the next by an after= cursor, keeping rows and columns; the last page has no link', async () => {
    const response = await data('getDataPaginate', 'SUBJECT', 'fromRow=1&rows=7&columns=NAZEV');
    const link = nextLink(response)!;
    expect(link).toMatch(
      /^\/demo\/JsonAPI\/Data\/getDataPaginate\/SUBJECT\?after=[A-Za-z0-9_.-]+&rows=7&columns=NAZEV$/,
    );
    const pages = await follow(
      '/demo/JsonAPI/Data/getDataPaginate/SUBJECT?fromRow=1&rows=7&columns=NAZEV,ID',
    );
    // 60 rows: eight pages of 7, then one of 4 without a link.
    expect(pages.map((p) => p.length)).toEqual([7, 7, 7, 7, 7, 7, 7, 7, 4]);
    expect(pages.flat().map((r) => r.ID)).toEqual([...Array(60)].map((_, i) => i + 1));
    expect(Object.keys(pages[3]![0]!)).toEqual(['NAZEV', 'ID']);
  });

  it('visits every row exactly once in order on a composite key', async () => {
    const pages = await follow(`/demo/JsonAPI/Data/getDataPaginate/${PAIRS}?fromRow=1&rows=5`);
    const keys = pages.flat().map((r) => `${r.A}${r.B}`);
    expect(keys).toEqual(['1x', '1y', '1z', '1zz', '2x', '2y', '2z', '2zz', '3x', '3y', '3z', '3zz']);
  });

  it('does not see rows inserted behind the cursor, and deletions shift nothing', async () => {
    const seen = await follow(
      `/demo/JsonAPI/Data/getDataPaginate/${KEYED}?fromRow=1&rows=4`,
      async (page) => {
        if (page === 2) {
          // Behind the cursor (after row 80): not seen; ahead of it: seen; a deletion ahead: gone, nothing skipped.
          await run(`INSERT INTO dbo."${KEYED}" ("ID", "T") VALUES (15, 'behind'), (155, 'ahead')`);
          await run(`DELETE FROM dbo."${KEYED}" WHERE "ID" = 100`);
        }
      },
    );
    await run(`DELETE FROM dbo."${KEYED}" WHERE "ID" IN (15, 155)`);
    await run(`INSERT INTO dbo."${KEYED}" ("ID", "T") VALUES (100, 't9')`);
    const ids = seen.flat().map((r) => r.ID);
    const expected = [...Array(20)].map((_, i) => (i + 1) * 10).filter((id) => id !== 100);
    expected.splice(expected.indexOf(160), 0, 155);
    expect(ids).toEqual(expected);
  });

  it('a page of a source without a primary key links by fromRow', async () => {
    const response = await data('getDataPaginate', 'V_DOKUMENT_SOUBOR', 'fromRow=1&rows=1');
    expect(nextLink(response)).toBe('/demo/JsonAPI/Data/getDataPaginate/V_DOKUMENT_SOUBOR?fromRow=2&rows=1');
  });

  it('refuses an altered cursor, one of another source, and after with fromRow: 400 invalid_cursor / invalid_paging', async () => {
    const link = nextLink(await data('getDataPaginate', 'DOKUMENT', 'fromRow=1&rows=3'))!;
    const cursor = new URL(link, stack.url).searchParams.get('after')!;
    const [payload, mac] = cursor.split('.') as [string, string];
    const forged = Buffer.from(JSON.stringify([99990])).toString('base64url');
    for (const bad of [`${forged}.${mac}`, `${payload}.${mac.slice(0, -2)}AA`, 'garbage', `${payload}.`]) {
      const response = await data('getDataPaginate', 'DOKUMENT', `after=${encodeURIComponent(bad)}&rows=3`);
      expect(response.status, bad).toBe(400);
      expect((await errorOf(response)).code).toBe('invalid_cursor');
    }
    const elsewhere = await data('getDataPaginate', 'SUBJECT', `after=${cursor}&rows=3`);
    expect(elsewhere.status).toBe(400);
    expect((await errorOf(elsewhere)).code).toBe('invalid_cursor');
    const both = await data('getDataPaginate', 'DOKUMENT', `after=${cursor}&fromRow=1&rows=3`);
    expect(both.status).toBe(400);
    expect((await errorOf(both)).code).toBe('invalid_paging');
  });

  it('refuses a cursor with a valid MAC whose values do not fit the key: 400 invalid_cursor, never 500', async () => {
    // Made with the stack's own signing key (.data/signing-key), as a holder of a leaked key could.
    const key = Buffer.from(await localSigningKey());
    const mint = (source: string, values: unknown[]) =>
      mintCursor(key, { tenant: 'demo', schema: 'dbo', source, primaryKey: ['ID'] }, values);
    // A fitting one is taken (the minting is right), then values of every wrong shape.
    const fitting = await data('getDataPaginate', 'SUBJECT', `after=${mint('SUBJECT', [5])}&rows=2`);
    expect(fitting.status).toBe(200);
    for (const values of [['x'], [1.5], [1e20], [2147483648], [null], [-1e308], [[1]], [1, 2], ['１']]) {
      const response = await data('getDataPaginate', 'SUBJECT', `after=${mint('SUBJECT', values)}&rows=2`);
      expect(response.status, JSON.stringify(values)).toBe(400);
      expect((await errorOf(response)).code).toBe('invalid_cursor');
    }
  });
});

describe('per-tenant description', () => {
  it('needs Basic credentials', async () => {
    const response = await fetch(`${stack.url}/demo/JsonAPI/openapi.json`);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/^Basic realm="demo"/);
  });

  it('is valid OpenAPI 3.1 with a row schema per readable source, without hidden columns or never-served tables', async () => {
    const response = await get('/demo/JsonAPI/openapi.json');
    expect(response.status).toBe(200);
    const document = (await response.json()) as {
      paths: Record<string, unknown>;
      components: { schemas: Record<string, { properties: Record<string, unknown>; required?: string[] }> };
    };
    const validator = new Validator();
    const result = await validator.validate(document as never);
    expect(result.errors ?? []).toEqual([]);
    expect(validator.version).toBe('3.1');
    const subject = document.components.schemas.SUBJECT!;
    expect(subject.properties.ID).toEqual({ type: 'integer', format: 'int32' });
    expect(subject.properties.NAZEV).toEqual({ type: 'string' });
    expect(subject.properties).not.toHaveProperty('SECRET_WEBHOOK');
    // NOT NULL columns are always in a record; nullable ones may be left out.
    expect(subject.required).toContain('ID');
    expect(subject.required).not.toContain('WEBHOOK_URL');
    const dokument = document.components.schemas.DOKUMENT!;
    expect(dokument.properties.DATUM_VYSTAVENI).toMatchObject({ type: 'string' });
    expect(dokument.properties.CASTKA_CELKEM).toMatchObject({ type: 'number' });
    expect(Object.keys(document.components.schemas)).not.toContain('WS_APPLICATION');
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining([
        '/demo/JsonAPI/Data/getData/SUBJECT',
        '/demo/JsonAPI/Data/getDataWithCondition/SUBJECT',
        '/demo/JsonAPI/Data/getDataPaginate/SUBJECT',
        '/demo/JsonAPI/Data/getRowsCount/SUBJECT',
      ]),
    );
    expect(Object.keys(document.paths).some((p) => /WS_APPLICATION/i.test(p))).toBe(false);
    // The view by its name as declared, on every database (Babelfish's catalogue lower-cases it).
    expect(Object.keys(document.components.schemas)).toContain('V_DOKUMENT_SOUBOR');
    expect(Object.keys(document.paths)).toContain('/demo/JsonAPI/Data/getData/V_DOKUMENT_SOUBOR');
  });

  it("has no problem, error or warning, under redocly's recommended rules (its tables, subscriptions and their events)", async () => {
    const document = (await (await get('/demo/JsonAPI/openapi.json')).json()) as {
      paths: Record<string, unknown>;
      webhooks?: Record<string, unknown>;
    };
    // What the fifth round found problems in is there to lint.
    expect(Object.keys(document.paths)).toContain('/demo/JsonAPI/Subscriptions/{subscriptionId}/rotate');
    expect(Object.keys(document.webhooks ?? {})).toEqual(['tableChanged', 'subscriptionPing']);
    expect(await redoclyProblemsOf(document)).toEqual([]);
  });

  it('gives a generated client (openapi-typescript + openapi-fetch) that refuses a wrong table or column at compile time', {
    timeout: 90_000,
  }, async () => {
    const document = await (await get('/demo/JsonAPI/openapi.json')).json();
    const dir = join(process.cwd(), '.data', `typed-client-${suffix}`);
    await mkdir(dir, { recursive: true });
    try {
      await writeFile(join(dir, 'api.ts'), astToString(await openapiTS(document as never)));
      const program = (body: string) => `import createClient from 'openapi-fetch';
import type { paths } from './api';
const client = createClient<paths>({ baseUrl: 'http://127.0.0.1' });
export async function read() {
  ${body}
}
`;
      const cases = {
        right: program(`const { data } = await client.GET('/demo/JsonAPI/Data/getData/SUBJECT');
  const name: string | undefined = data?.SUBJECT[0]?.NAZEV;
  const id: number | undefined = data?.SUBJECT[0]?.ID;
  const page = await client.GET('/demo/JsonAPI/Data/getDataPaginate/DOKUMENT', { params: { query: { rows: 10, fromRow: 1 } } });
  const total: number | undefined = page.data?.DOKUMENT[0]?.CASTKA_CELKEM;
  return [name, id, total];`),
        wrongTable: program(`const { data } = await client.GET('/demo/JsonAPI/Data/getData/SUBJEKT');
  return data;`),
        wrongColumn: program(`const { data } = await client.GET('/demo/JsonAPI/Data/getData/SUBJECT');
  return data?.SUBJECT[0]?.NAZEW;`),
        hiddenColumn: program(`const { data } = await client.GET('/demo/JsonAPI/Data/getData/SUBJECT');
  return data?.SUBJECT[0]?.SECRET_WEBHOOK;`),
        wrongType: program(`const { data } = await client.GET('/demo/JsonAPI/Data/getData/SUBJECT');
  const id: string | undefined = data?.SUBJECT[0]?.ID;
  return id;`),
      };
      for (const [name, text] of Object.entries(cases)) await writeFile(join(dir, `${name}.ts`), text);
      const compiled = ts.createProgram(
        Object.keys(cases).map((name) => join(dir, `${name}.ts`)),
        {
          strict: true,
          noEmit: true,
          target: ts.ScriptTarget.ES2022,
          module: ts.ModuleKind.ESNext,
          moduleResolution: ts.ModuleResolutionKind.Bundler,
          skipLibCheck: true,
          lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
        },
      );
      const errors = (name: string) =>
        ts
          .getPreEmitDiagnostics(compiled, compiled.getSourceFile(join(dir, `${name}.ts`)))
          // Each error with the line it is on: the wrong name is there, whatever words the compiler uses.
          .map((d) => {
            const text = d.file?.text ?? '';
            const line = text.slice(
              text.lastIndexOf('\n', d.start ?? 0) + 1,
              text.indexOf('\n', d.start ?? 0),
            );
            return `${ts.flattenDiagnosticMessageText(d.messageText, '\n')} @ ${line.trim()}`;
          });
      expect(errors('right')).toEqual([]);
      expect(errors('wrongTable').join('\n')).toContain('SUBJEKT');
      expect(errors('wrongColumn').join('\n')).toContain('NAZEW');
      expect(errors('hiddenColumn').join('\n')).toContain('SECRET_WEBHOOK');
      expect(errors('wrongType').join('\n')).toMatch(/number.*string|not assignable/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
