import type { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as getData } from '../../functions/web-api/getData.js';
import { handler as test } from '../../functions/web-api/test.js';
import { registerEmbeddedDatabase } from '../../shared/config/databases.js';
import { setTenantRegistry } from '../../shared/config/tenant-registry.js';
import { parseTenantRegistry } from '../../shared/config/tenants.js';
import type { LogFields } from '../../shared/core/log.js';
import { serviceLog, serviceMetrics, useObservability } from '../../shared/lambda/observability.js';
import { demoDatabase } from '../support/demo.js';
import { httpApiEvent, invokeHttp } from '../support/http-api-event.js';
import { envelope, type SignOptions } from '../support/web-api.js';
import { signedWebApiEvent } from '../support/web-api-event.js';

/**
 * Web API applications in the tenant registry (CONTRACT.md section 2), on the embedded database:
 * found by key, several API hashes while one is rotated, inactive or removed refused from the
 * registry's next read, their ids what the journal records and 997 compares; and the ERP's own
 * register (`WS_APPLICATION`) where a tenant names it instead. The same on the T-SQL engine:
 * tests/integration/mssql-erp-layout.test.ts.
 */

let pg: PGlite;
const DATABASE = 'web-api-applications';

const partner = {
  id: 41,
  name: 'Partner s.r.o.',
  apiKey: 'partner-key-41',
  apiHashes: ['partner-hash-new', 'partner-hash-old'],
};
const second = { id: 42, apiKey: 'second-key-42', apiHashes: ['second-hash'] };
const dormant = { id: 43, apiKey: 'dormant-key-43', apiHashes: ['dormant-hash'], active: false };

const tenant = (applications: unknown) => ({
  database: { kind: 'embedded', name: DATABASE },
  dataApiUsers: [
    {
      name: 'demo',
      passwordHash: 'scrypt$16384$8$1$ZGVtby10ZW5hbnQtc2FsdA==$x2bp48ourmNi7AJz+st/kNLkTjPJ/XnX7NIpiDrZ8ig=',
    },
  ],
  dataSources: '*',
  webApi: { applications },
});

/** The registry of this file: tenant `demo` with `applications`, and `erp` reading WS_APPLICATION. */
const useRegistry = (applications: unknown[]) =>
  setTenantRegistry(
    parseTenantRegistry({
      tenants: {
        demo: tenant(applications),
        erp: tenant({ erpTable: 'dbo.WS_APPLICATION' }),
        empty: { ...tenant([]), database: { kind: 'embedded', name: `${DATABASE}-empty` } },
      },
    }),
  );

const logged: { message: string; fields: LogFields }[] = [];
let previous: { log: ReturnType<typeof serviceLog>; metrics: ReturnType<typeof serviceMetrics> };

beforeAll(async () => {
  const demo = await demoDatabase();
  pg = demo.pg;
  registerEmbeddedDatabase(DATABASE, demo.db);
  registerEmbeddedDatabase(`${DATABASE}-empty`, demo.db);
  useRegistry([partner, second, dormant]);
  previous = { log: serviceLog(), metrics: serviceMetrics() };
  const keep = (message: string, fields: LogFields = {}) => void logged.push({ message, fields });
  useObservability({ log: { debug: keep, info: keep, warn: keep, error: keep } });
});
afterAll(async () => {
  useObservability(previous);
  setTenantRegistry(undefined);
  await pg?.close();
});

async function call(body: string, options: SignOptions & { tenant?: string }) {
  const result = await invokeHttp(getData, signedWebApiEvent('getData', body, options));
  const text = String(result.body);
  return { status: result.statusCode, body: text, answer: JSON.parse(text) };
}
const errorCode = (answer: { data: { error: { errorCode: string }[] }[] }) =>
  answer.data[0]?.error[0]?.errorCode;

async function keyTest(apiKey: string, tenantId = 'demo') {
  const result = await invokeHttp(
    test,
    httpApiEvent({
      method: 'GET',
      route: '/{tenant}/WebAPI/test',
      pathParameters: { tenant: tenantId },
      headers: { 'x-api-key': apiKey },
    }),
  );
  return { status: result.statusCode, body: String(result.body) };
}

describe('Web API applications in the tenant registry (embedded database)', () => {
  it("finds an application by its exact key, the registry's id journaled", async () => {
    expect((await keyTest('partner-key-41')).status).toBe(200);
    for (const wrong of ['PARTNER-KEY-41', 'partner-key-41 ', 'partner-key-4', 'demo-api-key']) {
      const refused = await keyTest(wrong);
      expect([refused.status, JSON.parse(refused.body).data[0].error[0].errorCode]).toEqual([401, '102']);
    }
    const { status, answer } = await call(envelope(1001, [{ ico: '25596641' }]), {
      apiKey: 'partner-key-41',
      apiHash: 'partner-hash-new',
    });
    expect(status).toBe(200);
    // Application 41 is in no table of the database: the journal records the registry's id.
    const { rows } = await pg.query<{ APPLICATION_ID: number }>(
      'SELECT "APPLICATION_ID" FROM dbo."WS_JOURNAL" WHERE "ID" = $1',
      [answer.id],
    );
    expect(rows).toEqual([{ APPLICATION_ID: 41 }]);
  });

  it('accepts a signature made with any of its API hashes (a rotation), and none of another', async () => {
    for (const apiHash of ['partner-hash-new', 'partner-hash-old']) {
      const { status } = await call(envelope(7, [{ kod_uctu: '21', hash: apiHash }]), {
        apiKey: 'partner-key-41',
        apiHash,
      });
      expect(status, apiHash).toBe(200);
    }
    for (const apiHash of ['second-hash', 'partner-hash', 'demo-api-hash']) {
      const refused = await call(envelope(7, [{ hash: apiHash }]), { apiKey: 'partner-key-41', apiHash });
      expect([refused.status, errorCode(refused.answer)], apiHash).toEqual([401, '103']);
      // The message says what to check, never a hash.
      expect(refused.body).not.toMatch(/partner-hash|second-hash/);
    }
  });

  it('refuses an inactive application with 401/102, as an unknown key', async () => {
    const refused = await call(envelope(1001), { apiKey: 'dormant-key-43', apiHash: 'dormant-hash' });
    expect([refused.status, errorCode(refused.answer)]).toEqual([401, '102']);
    expect((await keyTest('dormant-key-43')).status).toBe(401);
  });

  it("answers 997 only the application's own calls: another application's journal id is 404/111", async () => {
    const own = await call(envelope(1001, [{ nazev: 'alfa', n: 997 }]), {
      apiKey: 'partner-key-41',
      apiHash: 'partner-hash-new',
    });
    expect(own.status).toBe(200);
    const asked = envelope(997, [{ idws_journal: own.answer.id }]);
    const foreign = await call(asked, { apiKey: 'second-key-42', apiHash: 'second-hash' });
    expect([foreign.status, errorCode(foreign.answer)]).toEqual([404, '111']);
    const mine = await call(asked, { apiKey: 'partner-key-41', apiHash: 'partner-hash-old' });
    expect(mine.status).toBe(200);
    expect(mine.answer.data).toEqual([{ resultForId: own.answer, id: own.answer.id }]);
  });

  it("counts a rotation's end and a removal from the registry's next read, never from a cache of its own", async () => {
    process.env.WEB_API_CACHE_SECONDS = '300';
    try {
      const body = (n: number) => envelope(7, [{ kod_uctu: '21', round: n }]);
      expect((await call(body(1), { apiKey: 'partner-key-41', apiHash: 'partner-hash-old' })).status).toBe(
        200,
      );
      expect((await call(body(2), { apiKey: 'second-key-42', apiHash: 'second-hash' })).status).toBe(200);
      // The old hash dropped, application 42 removed: the registry as the next read brings it.
      useRegistry([{ ...partner, apiHashes: ['partner-hash-new'] }, dormant]);
      const old = await call(body(3), { apiKey: 'partner-key-41', apiHash: 'partner-hash-old' });
      expect([old.status, errorCode(old.answer)]).toEqual([401, '103']);
      expect((await call(body(4), { apiKey: 'partner-key-41', apiHash: 'partner-hash-new' })).status).toBe(
        200,
      );
      const removed = await call(body(5), { apiKey: 'second-key-42', apiHash: 'second-hash' });
      expect([removed.status, errorCode(removed.answer)]).toEqual([401, '102']);
    } finally {
      delete process.env.WEB_API_CACHE_SECONDS;
      useRegistry([partner, second, dormant]);
    }
  });

  it("never falls back on a table: a tenant without applications is 401/102 for the demo's WS_APPLICATION keys", async () => {
    const refused = await call(envelope(1001), {
      apiKey: 'demo-api-key',
      apiHash: 'demo-api-hash',
      tenant: 'empty',
    });
    expect([refused.status, errorCode(refused.answer)]).toEqual([401, '102']);
  });

  it("reads the ERP's register where the tenant names it instead (WS_APPLICATION, read only)", async () => {
    const before = await pg.query('SELECT * FROM dbo."WS_APPLICATION" ORDER BY "ID"');
    expect((await keyTest('demo-api-key', 'erp')).status).toBe(200);
    expect((await keyTest('partner-key-41', 'erp')).status).toBe(401);
    const { status, answer } = await call(envelope(1001, [{ ico: '25596641', erp: 1 }]), {
      apiKey: 'other-api-key',
      apiHash: 'other-api-hash',
      tenant: 'erp',
    });
    expect(status).toBe(200);
    const { rows } = await pg.query<{ APPLICATION_ID: number }>(
      'SELECT "APPLICATION_ID" FROM dbo."WS_JOURNAL" WHERE "ID" = $1',
      [answer.id],
    );
    expect(rows).toEqual([{ APPLICATION_ID: 2 }]);
    const inactive = await call(envelope(1001), {
      apiKey: 'inactive-api-key',
      apiHash: 'inactive-api-hash',
      tenant: 'erp',
    });
    expect([inactive.status, errorCode(inactive.answer)]).toEqual([401, '102']);
    expect(await pg.query('SELECT * FROM dbo."WS_APPLICATION" ORDER BY "ID"')).toEqual(before);
  });

  it('never writes an API hash into a log line', () => {
    const text = JSON.stringify(logged);
    expect(logged.length).toBeGreaterThan(0);
    for (const hash of [
      'partner-hash-new',
      'partner-hash-old',
      'second-hash',
      'dormant-hash',
      'other-api-hash',
    ]) {
      expect(text).not.toContain(hash);
    }
  });
});
