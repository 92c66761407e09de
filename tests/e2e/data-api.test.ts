import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { ERP_STAND_IN_OWN_TABLES } from '../../infra/local/tsql-engine.js';
import { INTERNAL_TABLES, isInternalTable } from '../../shared/core/data-api/data-source.js';
import { DEMO_AUTH, sqlOn } from '../support/demo.js';
import { isBabelfish } from '../support/mssql.js';
import { politeFetch } from '../support/polite-fetch.js';

let stack: LocalStack;
// Retries a 429 after its Retry-After: this suite's loops send faster than the tenant's rate on a fast machine.
const get = (path: string, headers: Record<string, string> = { authorization: DEMO_AUTH }) =>
  politeFetch(`${stack.url}${path}`, { headers, redirect: 'manual' });
const data = (fn: string, source: string, query = '') =>
  get(`/demo/JsonAPI/Data/${fn}/${source}${query ? `?${query}` : ''}`);

beforeAll(async () => {
  stack = await startLocalStack({ port: 0 });
});
const onBabelfish = async () => stack.databaseKind === 'tsql' && (await isBabelfish(stack.database));
afterAll(async () => {
  await stack?.stop();
});

describe('Data API over HTTP (local stack)', () => {
  it('answers /health once ready', async () => {
    const response = await fetch(`${stack.url}/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  it('getData returns every row under the name as written in the URL', async () => {
    const response = await data('getData', 'subject');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const body = (await response.json()) as Record<string, Record<string, unknown>[]>;
    expect(Object.keys(body)).toEqual(['subject']);
    const rows = body.subject!;
    expect(rows.length).toBeGreaterThanOrEqual(50);
    expect(rows[0]).toMatchObject({ ID: 1 });
    // The demo tenant hides it (infra/local/tenants.json, hiddenColumns).
    expect(rows[0]).not.toHaveProperty('SECRET_WEBHOOK');
    // Ordered by the primary key.
    expect(rows.map((r) => r.ID)).toEqual([...rows.map((r) => r.ID as number)].sort((a, b) => a - b));
  });

  it('leaves NULL columns out, so records may have different keys', async () => {
    const body = (await (await data('getData', 'SUBJECT')).json()) as { SUBJECT: Record<string, unknown>[] };
    const withoutWebhook = body.SUBJECT.filter((r) => !('WEBHOOK_URL' in r));
    expect(withoutWebhook.length).toBeGreaterThan(0);
    for (const record of body.SUBJECT) {
      for (const value of Object.values(record)) expect(value).not.toBeNull();
    }
  });

  it('formats date-times without zone or fraction and numbers as JSON numbers', async () => {
    const body = (await (await data('getDataPaginate', 'DOKUMENT', 'fromRow=1&rows=5')).json()) as {
      DOKUMENT: Record<string, unknown>[];
    };
    const first = body.DOKUMENT[0]!;
    expect(first.DATUM_VYSTAVENI).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/);
    expect(first.DATUM_UZP).toMatch(/^\d{4}-\d\d-\d\dT00:00:00$/);
    expect(typeof first.CASTKA_CELKEM).toBe('number');
    expect(typeof first.ID).toBe('number');
  });

  it('returns GUIDs upper-case and views work (V_DOKUMENT_SOUBOR is not empty)', async () => {
    const body = (await (await data('getData', 'V_DOKUMENT_SOUBOR')).json()) as {
      V_DOKUMENT_SOUBOR: Record<string, unknown>[];
    };
    expect(body.V_DOKUMENT_SOUBOR.length).toBeGreaterThan(0);
    for (const row of body.V_DOKUMENT_SOUBOR) {
      expect(row.DOKUMENTFILEGUID).toMatch(/^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$/);
      expect(typeof row.FILENAME).toBe('string');
    }
  });

  it('accepts schema.NAME', async () => {
    const response = await data('getRowsCount', 'dbo.UCET');
    expect(response.status).toBe(200);
    const body = (await response.json()) as { 'dbo.UCET': { rowsCount: number }[] };
    expect(body['dbo.UCET'][0]!.rowsCount).toBeGreaterThan(10);
  });

  it('getRowsCount answers {"<source>":[{"rowsCount":N}]}', async () => {
    const response = await data('getRowsCount', 'DOKUMENT');
    expect(await response.json()).toEqual({ DOKUMENT: [{ rowsCount: 100000 }] });
  });

  it('getDataPaginate pages from row 1 without overlap or gaps', async () => {
    const page = async (fromRow: number, rows: number) =>
      (
        (await (await data('getDataPaginate', 'DOKUMENT', `fromRow=${fromRow}&rows=${rows}`)).json()) as {
          DOKUMENT: { ID: number }[];
        }
      ).DOKUMENT.map((r) => r.ID);
    const first = await page(1, 3);
    const second = await page(4, 3);
    const both = await page(1, 6);
    expect(both).toEqual([...first, ...second]);
    expect(new Set(both).size).toBe(6);
    expect(await page(99999, 10)).toHaveLength(2);
  });

  it('getDataPaginate past the end is an empty array', async () => {
    const response = await data('getDataPaginate', 'SUBJECT', 'fromRow=100000&rows=10');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ SUBJECT: [] });
  });

  it.each([
    ['missing fromRow', 'rows=10'],
    ['missing rows', 'fromRow=1'],
    ['fromRow 0', 'fromRow=0&rows=10'],
    ['rows 0', 'fromRow=1&rows=0'],
    ['rows over 10000', 'fromRow=1&rows=10001'],
    ['not a number', 'fromRow=abc&rows=10'],
    ['a fraction', 'fromRow=1.5&rows=10'],
    ['rows given twice', 'fromRow=1&rows=1&rows=2'],
    ['fromRow given twice', 'fromRow=1&fromRow=3&rows=1'],
  ])('getDataPaginate refuses %s with 400', async (_name, query) => {
    const response = await data('getDataPaginate', 'SUBJECT', query);
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { code: string; message: string; requestId: string } };
    expect(body.error.code).toBe('invalid_paging');
    expect(body.error.message).toMatch(/fromRow|rows/);
    expect(body.error.requestId).toBeTruthy();
  });

  it('getDataWithCondition filters with a checked condition, case-insensitively', async () => {
    const condition = encodeURIComponent("NAZEV LIKE 'alfa%' AND ID = 1");
    const response = await data('getDataWithCondition', 'SUBJECT', `condition=${condition}`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { SUBJECT: { ID: number }[] };
    expect(body.SUBJECT.map((r) => r.ID)).toEqual([1]);
  });

  it('getDataWithCondition supports functions and dates', async () => {
    const condition = encodeURIComponent(
      "YEAR(DATUM_VYSTAVENI) >= 2000 AND ISNULL(POZNAMKA, '') = '' AND ID <= 20",
    );
    const response = await data('getDataWithCondition', 'DOKUMENT', `condition=${condition}`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { DOKUMENT: { ID: number; POZNAMKA?: string }[] };
    expect(body.DOKUMENT.length).toBeGreaterThan(0);
    for (const row of body.DOKUMENT) expect(row.POZNAMKA ?? '').toBe('');
  });

  it.each([
    ['a second statement', '1=1; DROP TABLE SUBJECT'],
    ['a comment', 'ID = 1 --'],
    ['a subquery', 'ID IN (SELECT ID FROM WS_APPLICATION)'],
    ['an unknown column', 'NOPE = 1'],
    ['a variable', '@@VERSION = 1'],
  ])('getDataWithCondition refuses %s with 400 naming the position', async (_name, condition) => {
    const response = await data(
      'getDataWithCondition',
      'SUBJECT',
      `condition=${encodeURIComponent(condition)}`,
    );
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('invalid_condition');
    expect(body.error.message).toMatch(/position/i);
  });

  it('getDataWithCondition refuses a condition given twice instead of using one of them', async () => {
    const query = `condition=${encodeURIComponent("KOD_UCTU = '013000'")}&condition=${encodeURIComponent('1 = 0')}`;
    const response = await data('getDataWithCondition', 'UCET', query);
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('invalid_condition');
    expect(body.error.message).toMatch(/"condition" is given 2 times/);
  });

  it('getDataWithCondition without a condition is a 400', async () => {
    const response = await data('getDataWithCondition', 'SUBJECT');
    expect(response.status).toBe(400);
  });

  it('a value that does not fit its column is a 400, not a 500', async () => {
    const condition = encodeURIComponent("ID = 'abc'");
    const response = await data('getDataWithCondition', 'SUBJECT', `condition=${condition}`);
    expect(response.status).toBe(400);
    const text = await response.text();
    expect(text).not.toMatch(/SELECT|dbo\.|stack/i);
  });

  it.each([
    ['ID / 0 = 1', /division by zero/],
    ['ID % 0 = 1', /division by zero/],
    ['ID * 100000 * 100000 > 1', /out of the range/],
    ["SUBSTRING(NAZEV, 1, -1) = 'a'", /negative length/],
    // What SQL Server refuses and PostgreSQL would take (CONTRACT.md section 4).
    ["LEFT(NAZEV, -1) = 'a'", /negative length \(-1\) was given to LEFT/],
    ["LEFT(NAZEV, ID - 1000) = 'a'", /negative length/],
    ['CAST(300 AS TINYINT) = ID', /300 is out of the range of TINYINT/],
    ['CAST(ID * 1000 AS TINYINT) = 1', /out of the range/],
    ["DATUM_ZALOZENI > 'infinity'", /cannot convert the text 'infinity' to datetime/],
    ["DATUM_ZALOZENI > 'J2451187'", /cannot convert the text 'J2451187'/],
    ['DATEADD(year, 9000, DATUM_ZALOZENI) > DATUM_ZALOZENI', /out of the range/],
  ])('names what failed when %s cannot be evaluated (400)', async (condition, problem) => {
    const response = await data(
      'getDataWithCondition',
      'SUBJECT',
      `condition=${encodeURIComponent(condition)}`,
    );
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('invalid_condition');
    // A literal negative length is refused when parsed, in the same words everywhere. A computed one
    // reaches the database: Babelfish reports it with its generic error number, not SQL Server's
    // 536/537 (docs/sql-server.md, "Verified where"): still a 400, in the general words.
    const computedLength = /negative length/.test(String(problem)) && condition.includes('ID - ');
    const generic = computedLength && (await onBabelfish());
    expect(body.error.message).toMatch(generic ? /a value does not fit/ : problem);
    expect(body.error.message).not.toMatch(/SELECT|integer|dbo/i);
  });

  it('a name that is not an identifier is a 400', async () => {
    const response = await data('getData', encodeURIComponent('SUBJECT;DROP'));
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_data_source');
  });

  it('an unknown data source is a 404', async () => {
    const response = await data('getData', 'NEEXISTUJE');
    expect(response.status).toBe(404);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('data_source_not_found');
  });

  it('WS_APPLICATION is never served, in any spelling', async () => {
    for (const name of ['WS_APPLICATION', 'ws_application', 'dbo.WS_Application']) {
      const response = await data('getData', name);
      expect(response.status).toBe(404);
      expect(await response.text()).not.toContain('demo-api-hash');
    }
    expect((await data('getRowsCount', 'WS_APPLICATION')).status).toBe(404);
  });

  it("SVC_IDEMPOTENCY (the keys' recorded answers, a subscription's secret among them) answers as an unknown table, rows and all", async () => {
    const sql = sqlOn(stack.database);
    const digest = createHash('sha256').update(`data-api-${Date.now()}-${Math.random()}`).digest('hex');
    // A recorded answer of a subscription's creation, as the service keeps it (CONTRACT 5a).
    await sql`INSERT INTO dbo."SVC_IDEMPOTENCY" ("KEY_DIGEST", "TENANT", "FINGERPRINT", "HTTP_STATUS", "CONTENT_TYPE", "BODY", "EXPIRES_AT")
      VALUES (${digest}, ${'demo'}, ${digest}, ${201}, ${'application/json'}, ${Buffer.from('{"secret":"whsec_recorded"}')}, ${new Date(Date.now() + 3_600_000)})`;
    try {
      // The answer but for its request id; the secret never in it.
      const answer = async (fn: string, name: string) => {
        const response = await data(fn, name);
        const text = await response.text();
        expect(text).not.toContain('whsec_recorded');
        const { error } = JSON.parse(text) as { error: { code: string; message: string } };
        return { status: response.status, code: error.code, message: error.message };
      };
      for (const fn of ['getData', 'getRowsCount']) {
        for (const spelling of ['SVC_IDEMPOTENCY', 'svc_idempotency', 'dbo.SVC_IDEMPOTENCY']) {
          const unknown = await answer(fn, `${spelling}_NOT_THERE`);
          expect([fn, await answer(fn, spelling)]).toEqual([
            fn,
            { ...unknown, message: unknown.message.replace(`${spelling}_NOT_THERE`, spelling) },
          ]);
          expect(unknown).toMatchObject({ status: 404, code: 'data_source_not_found' });
        }
      }
    } finally {
      await sql`DELETE FROM dbo."SVC_IDEMPOTENCY" WHERE "KEY_DIGEST" = ${digest}`;
    }
  });

  it('never serves an internal table, listed or marked by its name, in any call or spelling (issue 19)', async () => {
    const q = stack.database.dialect.quoteIdent;
    // The listed tables the demo schema lacks (issue 21 adds some), and one of each marker.
    const marked = ['WS_JOB_LEASE', 'SVC_SIGNING_KEYS', 'WEBHOOK_ENDPOINT_STATE', 'WS_REQUEST_LOCK'];
    const existing = new Set(
      (
        (await stack.database.query(
          `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'dbo'`,
        )) as { name: string }[]
      ).map((row) => row.name.toUpperCase()),
    );
    for (const name of [...INTERNAL_TABLES, ...marked]) {
      if (existing.has(name)) continue;
      await stack.database.query(`CREATE TABLE ${q('dbo')}.${q(name)} (${q('ID')} int NOT NULL PRIMARY KEY)`);
      await stack.database.query(`INSERT INTO ${q('dbo')}.${q(name)} (${q('ID')}) VALUES (1)`);
    }
    // The replay guard has rows once a signed call was accepted.
    expect(existing.has('WS_REPLAY_GUARD')).toBe(true);
    for (const name of [...INTERNAL_TABLES, ...marked]) {
      expect(isInternalTable(name), name).toBe(true);
      for (const spelling of [name, name.toLowerCase(), `dbo.${name.toLowerCase()}`]) {
        for (const [fn, query] of [
          ['getData', ''],
          ['getDataWithCondition', `condition=${encodeURIComponent('1 = 1')}`],
          ['getDataPaginate', 'fromRow=1&rows=10'],
          ['getRowsCount', ''],
        ] as const) {
          const response = await data(fn, spelling, query);
          const body = (await response.json()) as { error?: { code: string } };
          expect([spelling, fn, response.status, body.error?.code]).toEqual([
            spelling,
            fn,
            404,
            'data_source_not_found',
          ]);
        }
      }
    }
    // The audit trail stays readable.
    for (const name of ['WS_JOURNAL', 'WEBHOOK_DELIVERY', 'WS_OPERATION', 'SVCDOC']) {
      expect([name, (await data('getRowsCount', name)).status]).toEqual([name, 200]);
    }
  });

  it('serves every table and view of the demo database except the internal ones', async () => {
    const objects = (await stack.database.query(
      `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'dbo' ORDER BY 1`,
    )) as { name: string }[];
    expect(objects.length).toBeGreaterThanOrEqual(10);
    for (const { name } of objects) {
      const count = await data('getRowsCount', name);
      const page = await data('getDataPaginate', name, 'fromRow=1&rows=3');
      // The ERP stand-in's own tables are not granted to the service's role: 404 like an unknown one.
      const ungranted =
        stack.serviceRole !== undefined && ERP_STAND_IN_OWN_TABLES.includes(name.toUpperCase());
      const expected = isInternalTable(name) || ungranted ? 404 : 200;
      expect([name, count.status, page.status]).toEqual([name, expected, expected]);
    }
  });

  it('has flags 0, 1 and -1 in the demo data', async () => {
    for (const value of [0, 1, -1]) {
      const condition = encodeURIComponent(`STORNO = ${value} AND ID <= 2000`);
      const filtered = await data('getDataWithCondition', 'DOKUMENT', `condition=${condition}`);
      const rows = ((await filtered.json()) as { DOKUMENT: { STORNO: number }[] }).DOKUMENT;
      expect(rows.length, `STORNO = ${value}`).toBeGreaterThan(0);
      expect(new Set(rows.map((r) => r.STORNO))).toEqual(new Set([value]));
    }
  });

  it('an unknown tenant is a 404', async () => {
    const response = await get('/nobody/JsonAPI/Data/getData/SUBJECT');
    expect(response.status).toBe(404);
  });

  it('missing or wrong credentials are a 401 with a Basic challenge', async () => {
    const missing = await get('/demo/JsonAPI/Data/getData/SUBJECT', {});
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toMatch(/^Basic realm="demo"/);
    const wrong = await get('/demo/JsonAPI/Data/getData/SUBJECT', {
      authorization: `Basic ${Buffer.from('demo:wrong').toString('base64')}`,
    });
    expect(wrong.status).toBe(401);
    const body = (await wrong.json()) as { error: { code: string } };
    expect(body.error.code).toBe('unauthorized');
  });

  it('a body over 5 MB is answered 303 to a presigned URL holding the whole answer', async () => {
    const response = await data('getData', 'DOKUMENT');
    expect(response.status).toBe(303);
    const location = response.headers.get('location')!;
    expect(location).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/.*X-Amz-Expires=900/);
    const stored = await fetch(location);
    expect(stored.status).toBe(200);
    const text = await stored.text();
    expect(text.length).toBeGreaterThan(5 * 1024 * 1024);
    const body = JSON.parse(text) as { DOKUMENT: { ID: number }[] };
    expect(body.DOKUMENT).toHaveLength(100000);
    expect(body.DOKUMENT[99999]!.ID).toBe(100000);
    // 100,000 rows, 38 MB: seconds on an idle machine, much longer on a busy one.
  }, 60_000);

  it('unknown routes are a 404', async () => {
    expect((await get('/demo/JsonAPI/Data/nothing/SUBJECT')).status).toBe(404);
  });
});

describe('HTTP API emulation', () => {
  it('refuses a path with a malformed percent-escape with 400, as API Gateway does', async () => {
    const response = await fetch(`${stack.url}/demo/JsonAPI/Data/getData/SUB%ZZJECT`, {
      headers: { authorization: DEMO_AUTH },
    });
    expect(response.status).toBe(400);
  });
});
