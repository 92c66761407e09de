import type { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as getData } from '../../functions/web-api/getData.js';
import { handler as test } from '../../functions/web-api/test.js';
import { createEmbeddedWebApiStore } from '../../shared/adapters/embedded/web-api-store.js';
import { registerEmbeddedDatabase } from '../../shared/config/databases.js';
import { setTenantRegistry } from '../../shared/config/tenant-registry.js';
import { parseTenantRegistry } from '../../shared/config/tenants.js';
import { type Database, StatementCancelledError } from '../../shared/core/database.js';
import { demoDatabase } from '../support/demo.js';
import { httpApiEvent, invokeHttp } from '../support/http-api-event.js';
import { DEMO_WEB_API, envelope, type SignOptions } from '../support/web-api.js';
import { signedWebApiEvent } from '../support/web-api-event.js';

let pg: PGlite;
let db: Database;

const webApi = (overrides: Record<string, unknown> = {}) => ({
  CommandTimeoutAsync: 20,
  RequestMaxSecValidity: 300,
  CheckReplayRequest: true,
  ReplayRequestTime: 300,
  DefContentType: 'application/json',
  // The demo's applications, in the registry (infra/local/tenants.json).
  applications: DEMO_WEB_API.applications,
  ...overrides,
});
const tenant = (database: unknown, settings: Record<string, unknown> = {}) => ({
  database,
  dataApiUsers: [
    {
      name: 'demo',
      passwordHash: 'scrypt$16384$8$1$ZGVtby10ZW5hbnQtc2FsdA==$x2bp48ourmNi7AJz+st/kNLkTjPJ/XnX7NIpiDrZ8ig=',
    },
  ],
  dataSources: '*',
  webApi: webApi(settings),
});

beforeAll(async () => {
  const demo = await demoDatabase();
  pg = demo.pg;
  db = demo.db;
  registerEmbeddedDatabase('web-api-handlers', demo.db);
  const embedded = { kind: 'embedded', name: 'web-api-handlers' };
  setTenantRegistry(
    parseTenantRegistry({
      tenants: {
        demo: tenant(embedded),
        // On the same database, its applications read from the ERP's register (the demo's
        // WS_APPLICATION holds the same three): the registry's ids may not be given twice on one
        // database, the register's are the database's own.
        'no-replay-check': tenant(embedded, {
          CheckReplayRequest: false,
          applications: { erpTable: 'dbo.WS_APPLICATION' },
        }),
        // Nothing listens on port 1: the connection is refused at once.
        offline: tenant({
          kind: 'mssql',
          connectionString: 'mssql://svc:secret@127.0.0.1:1/ERP?connectTimeout=2000',
        }),
      },
    }),
  );
});
afterAll(async () => {
  setTenantRegistry(undefined);
  await pg?.close();
});

async function call(body: string, options: SignOptions & { tenant?: string } = {}) {
  const result = await invokeHttp(getData, signedWebApiEvent('getData', body, options));
  return { status: result.statusCode, type: result.headers?.['content-type'], body: String(result.body) };
}

const journalCount = async () =>
  Number((await pg.query<{ n: number }>('SELECT count(*)::int AS n FROM dbo."WS_JOURNAL"')).rows[0]!.n);

describe('Web API handlers on the embedded database', () => {
  it('test answers ok and the version for a known key', async () => {
    const result = await invokeHttp(
      test,
      httpApiEvent({
        method: 'GET',
        route: '/{tenant}/WebAPI/test',
        pathParameters: { tenant: 'demo' },
        headers: { 'x-api-key': 'other-api-key' },
      }),
    );
    expect(result.statusCode).toBe(200);
    expect(JSON.parse(String(result.body))).toEqual({
      status: 'ok',
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
    });
  });

  it('getData runs 1001 and journals the call: request, answer, state, times', async () => {
    const { status, body } = await call(envelope(1001, [{ nazev: 'ALFA' }]));
    expect(status).toBe(200);
    const answer = JSON.parse(body);
    expect(answer).toEqual({
      id: expect.any(Number),
      vlResult: 1,
      data: [{ id: 1, nazev: 'Alfa Trade s.r.o.', ico: '25596641', mesto: 'Praha' }],
    });
    const row = (
      await pg.query<Record<string, unknown>>(
        `SELECT "APPLICATION_ID", "VLTYP", "CALL_MODE", "STATE", "REQUEST", "ANSWER", "VL_RESULT", "ROW_NAME",
                "FINISHED_AT" >= "CREATED_AT" AS "ordered"
           FROM dbo."WS_JOURNAL" WHERE "ID" = $1`,
        [answer.id],
      )
    ).rows[0];
    expect(row).toEqual({
      APPLICATION_ID: 1,
      VLTYP: 1001,
      CALL_MODE: 'sync',
      STATE: 'finished',
      REQUEST: '{"vltyp":1001,"params":[{"nazev":"ALFA"}]}',
      ANSWER: body,
      VL_RESULT: 1,
      ROW_NAME: 'Subject',
      ordered: true,
    });
  });

  it("writes an operation's date-times and dates as YYYY-MM-DDThh:mm:ss and times as hh:mm:ss, as on SQL Server", async () => {
    // No demo operation returns one; the rows' types are unknown to the answer's encoder, so the
    // embedded adapter must give them in the answers' form (the SQL Server driver gives Dates).
    await pg.exec(`CREATE FUNCTION dbo."WS_OP_TEST_DATES"(p_params jsonb)
      RETURNS TABLE (at timestamp, at_zone timestamptz, day date, clock time) LANGUAGE sql AS $$
        SELECT timestamp '2024-01-02 03:04:05.678', timestamptz '2024-01-02 03:04:05.678+00', date '2024-01-02',
               time '09:11:59.123' $$;
      INSERT INTO dbo."WS_OPERATION" ("VLTYP", "NAZEV", "PROCEDURE_NAME", "ROW_NAME")
        VALUES (9210, 'dates', 'dbo.WS_OP_TEST_DATES', 'Dates');`);
    const json = await call(envelope(9210, []));
    expect(json.status).toBe(200);
    expect(JSON.parse(json.body).data).toEqual([
      {
        at: '2024-01-02T03:04:05',
        at_zone: '2024-01-02T03:04:05',
        day: '2024-01-02T00:00:00',
        clock: '09:11:59',
      },
    ]);
    const xml = await call('<data><vlTyp>9210</vlTyp></data>', { contentType: 'application/xml' });
    expect(xml.body).toContain(
      '<rowDates><at>2024-01-02T03:04:05</at><atZone>2024-01-02T03:04:05</atZone><day>2024-01-02T00:00:00</day><clock>09:11:59</clock></rowDates>',
    );
  });

  it('getData takes XML and journals it in its JSON form', async () => {
    const { status, type, body } = await call(
      '<data><vlTyp>7</vlTyp><params><kodUctu>21</kodUctu></params></data>',
    );
    expect([status, type]).toEqual([200, 'application/xml; charset=utf-8']);
    expect(body).toContain(
      '<rowUcet><kodUctu>211000</kodUctu><nazev>Pokladna</nazev><zustatek>48250</zustatek></rowUcet>',
    );
    const id = Number(/<id>(\d+)<\/id>/.exec(body)![1]);
    const { rows } = await pg.query<{ REQUEST: string }>(
      'SELECT "REQUEST" FROM dbo."WS_JOURNAL" WHERE "ID" = $1',
      [id],
    );
    expect(rows[0]!.REQUEST).toBe('{"vltyp":7,"params":[{"kod_uctu":"21"}]}');
  });

  it('accepts exactly one of many identical requests fired at once; the rest are 409/105', async () => {
    const before = await journalCount();
    const event = signedWebApiEvent('getData', envelope(7, [{ kod_uctu: '3' }]));
    const results = await Promise.all(Array.from({ length: 8 }, () => invokeHttp(getData, event)));
    const statuses = results.map((r) => r.statusCode).sort();
    expect(statuses).toEqual([200, 409, 409, 409, 409, 409, 409, 409]);
    const refused = results.find((r) => r.statusCode === 409)!;
    expect(JSON.parse(String(refused.body)).data[0].error[0].errorCode).toBe('105');
    expect(await journalCount()).toBe(before + 1);
  });

  it('keeps replays apart per application and per signed bytes', async () => {
    const body = envelope(7, [{ kod_uctu: '5' }]);
    const time = Math.floor(Date.now() / 1000);
    expect((await call(body, { time })).status).toBe(200);
    expect((await call(body, { time, apiKey: 'other-api-key', apiHash: 'other-api-hash' })).status).toBe(200);
    expect((await call(body, { time: time - 1 })).status).toBe(200);
    expect((await call(body, { time })).status).toBe(409);
  });

  it('takes a request again once its replay entry has expired', async () => {
    const body = envelope(7, [{ kod_uctu: '6' }]);
    const time = Math.floor(Date.now() / 1000);
    expect((await call(body, { time })).status).toBe(200);
    expect((await call(body, { time })).status).toBe(409);
    await pg.query(`UPDATE dbo."WS_REPLAY_GUARD" SET "EXPIRES_AT" = "EXPIRES_AT" - interval '1 hour'`);
    expect((await call(body, { time })).status).toBe(200);
  });

  it('accepts a repeated request when the tenant has CheckReplayRequest off', async () => {
    const body = envelope(7, [{ kod_uctu: '7' }]);
    const time = Math.floor(Date.now() / 1000);
    expect((await call(body, { time, tenant: 'no-replay-check' })).status).toBe(200);
    expect((await call(body, { time, tenant: 'no-replay-check' })).status).toBe(200);
  });

  it('answers a failing procedure with 200, vlResult -1 and 120, journaled as failed', async () => {
    const { status, body } = await call(envelope(9002));
    expect(status).toBe(200);
    const answer = JSON.parse(body);
    expect(answer.vlResult).toBe(-1);
    expect(answer.data[0].error[0]).toEqual({
      errorCode: '120',
      errorMessage:
        'Operation 9002 failed in the database: Operation 9002 always fails (demo of a failing procedure)',
    });
    const { rows } = await pg.query<{ STATE: string; VL_RESULT: number }>(
      'SELECT "STATE", "VL_RESULT" FROM dbo."WS_JOURNAL" WHERE "ID" = $1',
      [answer.id],
    );
    expect(rows[0]).toEqual({ STATE: 'failed', VL_RESULT: -1 });
  });

  it('runs and journals nothing for refused calls', async () => {
    const before = await journalCount();
    const refused = await Promise.all([
      call(envelope(1001), { apiHash: 'wrong-hash' }),
      call(envelope(4242)),
      call('{"vltyp":'),
      call(envelope(1001), { apiKey: 'inactive-api-key', apiHash: 'inactive-api-hash' }),
    ]);
    expect(refused.map((r) => r.status)).toEqual([401, 404, 400, 401]);
    expect(await journalCount()).toBe(before);
  });

  it('runs 9001 on the embedded database without holding it while it waits', async () => {
    const store = createEmbeddedWebApiStore(db, 'demo');
    const started = Date.now();
    const sleeping = store
      .callOperation((await store.findOperation(9001))!, [{ seconds: '1' }])
      .then((rows) => ({ rows, at: Date.now() - started }));
    const other = await call(envelope(1001, [{ ico: '25596641' }]));
    const otherAt = Date.now() - started;
    const slept = await sleeping;
    expect(slept.rows).toEqual([{ slept: 1 }]);
    expect(slept.at).toBeGreaterThanOrEqual(1000);
    expect(other.status).toBe(200);
    expect(otherAt).toBeLessThan(900);
  });

  it('cancels 9001 past WEB_API_SYNC_TIME_LIMIT: 200 with 161 and the journal id, journaled failed, 997 the same', async () => {
    process.env.WEB_API_SYNC_TIME_LIMIT = '1';
    try {
      const started = Date.now();
      const { status, body } = await call(envelope(9001, [{ seconds: '4' }]));
      const tookMs = Date.now() - started;
      const answer = JSON.parse(body);
      expect(status).toBe(200);
      expect(answer).toMatchObject({ vlResult: -1, data: [{ error: [{ errorCode: '161' }] }] });
      expect(answer.data[0].error[0].errorMessage).toMatch(
        /did not finish within the synchronous time limit of 1 s.*use getDataAsync/,
      );
      expect(tookMs).toBeGreaterThanOrEqual(1000);
      expect(tookMs).toBeLessThan(3000);
      const row = (
        await pg.query<{ STATE: string; ANSWER: string; VL_RESULT: number }>(
          'SELECT "STATE", "ANSWER", "VL_RESULT" FROM dbo."WS_JOURNAL" WHERE "ID" = $1',
          [answer.id],
        )
      ).rows[0]!;
      expect([row.STATE, row.VL_RESULT, JSON.parse(row.ANSWER)]).toEqual(['failed', -1, answer]);
      const again = JSON.parse((await call(envelope(997, [{ idws_journal: answer.id }]))).body);
      expect(again.data).toEqual([{ resultForId: answer, id: answer.id }]);
    } finally {
      delete process.env.WEB_API_SYNC_TIME_LIMIT;
    }
  });

  it('stops the embedded wait of an operation when its call is cancelled', async () => {
    const store = createEmbeddedWebApiStore(db, 'demo');
    const cancellation = new AbortController();
    const started = Date.now();
    const running = store
      .callOperation((await store.findOperation(9001))!, [{ seconds: '5' }], cancellation.signal)
      .catch((error: unknown) => error);
    setTimeout(() => cancellation.abort(), 200);
    const error = await running;
    expect(error).toBeInstanceOf(StatementCancelledError);
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it("a warm function remembers the ERP register's applications for WEB_API_CACHE_SECONDS: a deactivated key works within it", async () => {
    const setActive = (active: 0 | 1) =>
      pg.query(`UPDATE dbo."WS_APPLICATION" SET "AKTIVNI" = $1 WHERE "API_KEY" = 'other-api-key'`, [active]);
    const other = { apiKey: 'other-api-key', apiHash: 'other-api-hash', tenant: 'no-replay-check' };
    const body = (n: number) => envelope(1001, [{ nazev: 'alfa', n }]);
    try {
      process.env.WEB_API_CACHE_SECONDS = '30';
      expect((await call(body(1), other)).status).toBe(200);
      await setActive(0);
      expect((await call(body(2), other)).status).toBe(200);
      // The registry's applications are not the register's: the demo tenant's key still works.
      expect((await call(body(3), { ...other, tenant: 'demo' })).status).toBe(200);
      // Without the cache the deactivation counts at once.
      process.env.WEB_API_CACHE_SECONDS = '0';
      const refused = await call(body(4), other);
      expect(refused.status).toBe(401);
      expect(refused.body).toContain('"errorCode":"102"');
    } finally {
      delete process.env.WEB_API_CACHE_SECONDS;
      await setActive(1);
    }
  });

  it('answers 503/150 when the tenant database cannot be reached, without connection details', async () => {
    const { status, body } = await call(envelope(1001), { tenant: 'offline' });
    expect(status).toBe(503);
    expect(JSON.parse(body).data[0].error[0].errorCode).toBe('150');
    expect(body).not.toMatch(/127\.0\.0\.1|secret|svc/);
  });
});
