import type { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createEmbeddedIdempotencyStore } from '../../shared/adapters/embedded/idempotency-store.js';
import { createEmbeddedWebApiStore } from '../../shared/adapters/embedded/web-api-store.js';
import type { Database } from '../../shared/core/database.js';
import {
  authenticateApplication,
  requireOperation,
  type WebApiContext,
} from '../../shared/core/web-api/calls.js';
import { WebApiLookupCache, withLookupCache } from '../../shared/core/web-api/lookup-cache.js';
import { demoDatabase } from '../support/demo.js';
import { demoPolicy, refusal } from '../support/web-api-core.js';

const TTL_MS = 30_000;

describe("Web API lookup cache on the embedded demo database (operations, and the ERP register's applications)", () => {
  let pg: PGlite;
  let db: Database;
  let now = 0;
  let lookups = 0;

  /** The store as a warm process has it: real SQL, counted, behind a cache on a test clock. */
  const cachedStore = (ttlMs = TTL_MS) => {
    const counted: Database = {
      ...db,
      query: (sql, params) => {
        if (/WS_APPLICATION|WS_OPERATION/.test(sql)) lookups++;
        return db.query(sql, params);
      },
    };
    return withLookupCache(
      createEmbeddedWebApiStore(counted, 'demo'),
      new WebApiLookupCache(ttlMs, 1000, () => now),
    );
  };
  const ctxOf = (store: WebApiContext['store']): WebApiContext => ({
    tenant: 'demo',
    store,
    keys: createEmbeddedIdempotencyStore(db, 'demo'),
    requestId: 'test',
    policy: demoPolicy,
  });
  const setActive = (table: 'WS_APPLICATION' | 'WS_OPERATION', where: string, active: 0 | 1) =>
    pg.query(`UPDATE dbo."${table}" SET "AKTIVNI" = $1 WHERE ${where}`, [active]);

  beforeAll(async () => {
    ({ pg, db } = await demoDatabase());
  });
  afterAll(async () => {
    await pg.close();
  });
  beforeEach(async () => {
    now = 1_000_000;
    lookups = 0;
    await setActive('WS_APPLICATION', `"API_KEY" = 'demo-api-key'`, 1);
    await setActive('WS_OPERATION', `"VLTYP" = 1001`, 1);
  });

  it('looks an application and an operation up once per time-to-live', async () => {
    const store = cachedStore();
    for (let i = 0; i < 5; i++) {
      expect((await store.findApplication('demo-api-key'))?.id).toBe(1);
      expect((await store.findOperation(1001))?.rowName).toBe('Subject');
    }
    expect(lookups).toBe(2);
    now += TTL_MS; // expired: looked up again
    await store.findApplication('demo-api-key');
    await store.findOperation(1001);
    expect(lookups).toBe(4);
  });

  it('a deactivated key keeps working until the time-to-live has passed, then is refused 401/102', async () => {
    const store = cachedStore();
    await authenticateApplication(store, 'demo-api-key');
    await setActive('WS_APPLICATION', `"API_KEY" = 'demo-api-key'`, 0);
    now += TTL_MS - 1;
    expect((await authenticateApplication(store, 'demo-api-key')).id).toBe(1);
    now += 1;
    const error = await refusal(authenticateApplication(store, 'demo-api-key'));
    expect(error.errorCode).toBe('102');
    // Reactivated: accepted again once the remembered refusal has expired.
    await setActive('WS_APPLICATION', `"API_KEY" = 'demo-api-key'`, 1);
    now += TTL_MS;
    expect((await authenticateApplication(store, 'demo-api-key')).id).toBe(1);
  });

  it('a deactivated operation stays callable until the time-to-live has passed, then is 404/110', async () => {
    const store = cachedStore();
    await requireOperation(ctxOf(store), 1001);
    await setActive('WS_OPERATION', `"VLTYP" = 1001`, 0);
    expect((await requireOperation(ctxOf(store), 1001)).vltyp).toBe(1001);
    now += TTL_MS;
    const error = await refusal(requireOperation(ctxOf(store), 1001));
    expect(error.errorCode).toBe('110');
  });

  it('does not remember what it did not find: a new key works at once', async () => {
    const store = cachedStore();
    expect(await store.findApplication('brand-new-key')).toBeUndefined();
    await pg.query(
      `INSERT INTO dbo."WS_APPLICATION" ("ID", "NAZEV", "API_KEY", "API_HASH", "AKTIVNI")
       VALUES (77, 'new', 'brand-new-key', 'brand-new-hash', 1)`,
    );
    expect((await store.findApplication('brand-new-key'))?.id).toBe(77);
    expect(await store.findApplication('BRAND-NEW-KEY')).toBeUndefined();
  });

  it('with a time-to-live of 0 every call looks up, and a deactivation counts at once', async () => {
    const store = cachedStore(0);
    await authenticateApplication(store, 'demo-api-key');
    await setActive('WS_APPLICATION', `"API_KEY" = 'demo-api-key'`, 0);
    expect((await refusal(authenticateApplication(store, 'demo-api-key'))).errorCode).toBe('102');
    expect(lookups).toBe(2);
  });

  it('calls arriving together share one lookup, and a failed lookup is not remembered', async () => {
    const store = cachedStore();
    const found = await Promise.all(Array.from({ length: 10 }, () => store.findApplication('demo-api-key')));
    expect(found.every((a) => a?.id === 1)).toBe(true);
    expect(lookups).toBe(1);

    let failing = true;
    const flaky = withLookupCache(
      {
        ...createEmbeddedWebApiStore(db, 'demo'),
        findOperation: async (vltyp) => {
          if (failing) throw new Error('database unreachable');
          return createEmbeddedWebApiStore(db, 'demo').findOperation(vltyp);
        },
      },
      new WebApiLookupCache(TTL_MS, 1000, () => now),
    );
    await expect(flaky.findOperation(7)).rejects.toThrow('database unreachable');
    failing = false;
    expect((await flaky.findOperation(7))?.rowName).toBe('Ucet');
  });

  it('holds at most its size, dropping the oldest entry', async () => {
    const cache = new WebApiLookupCache(TTL_MS, 2, () => now);
    const store = createEmbeddedWebApiStore(db, 'demo');
    const counted = { n: 0 };
    const load = (vltyp: number) => () => {
      counted.n++;
      return store.findOperation(vltyp);
    };
    await cache.operation(7, load(7));
    await cache.operation(1001, load(1001));
    await cache.operation(9001, load(9001));
    await cache.operation(1001, load(1001)); // still there
    await cache.operation(7, load(7)); // dropped, looked up again
    expect(counted.n).toBe(4);
  });
});
