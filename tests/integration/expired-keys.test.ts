import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbeddedExpiredKeyStore } from '../../shared/adapters/embedded/expired-key-store.js';
import { createEmbeddedDatabase } from '../../shared/adapters/embedded/index.js';
import { registerEmbeddedDatabase, unregisterEmbeddedDatabase } from '../../shared/config/databases.js';
import { setTenantRegistry } from '../../shared/config/tenant-registry.js';
import { parseTenantRegistry } from '../../shared/config/tenants.js';
import type { Database } from '../../shared/core/database.js';
import { changeRetentionHandler } from '../../shared/lambda/change-feed.js';
import { serviceLog, serviceMetrics, useObservability } from '../../shared/lambda/observability.js';
import { demoDatabase } from '../support/demo.js';
import {
  checkExpiredKeysRemoved,
  checkRetentionRun,
  type KeptLog,
  recordKeys,
  stillRecorded,
} from '../support/expired-keys.js';

// Exactly once's retention (CONTRACT 5a) on the embedded database; the T-SQL twin is
// mssql-expired-keys.test.ts.
let pg: PGlite;
let db: Database;
let unscripted: PGlite;
const logged: KeptLog = [];
let previous: { log: ReturnType<typeof serviceLog>; metrics: ReturnType<typeof serviceMetrics> };

const HASH = 'scrypt$16384$8$1$ZGVtby10ZW5hbnQtc2FsdA==$x2bp48ourmNi7AJz+st/kNLkTjPJ/XnX7NIpiDrZ8ig=';
const tenantOn = (name: string) => ({
  database: { kind: 'embedded', name },
  dataApiUsers: [{ name: 'demo', passwordHash: HASH }],
  dataSources: '*',
});

beforeAll(async () => {
  ({ pg, db } = await demoDatabase());
  // A database whose scripts were not applied (yet): no dbo.SVC_IDEMPOTENCY.
  unscripted = new PGlite();
  await unscripted.exec('CREATE SCHEMA dbo');
  registerEmbeddedDatabase('expired-keys', db);
  registerEmbeddedDatabase('expired-keys-unscripted', createEmbeddedDatabase(unscripted));
  setTenantRegistry(
    parseTenantRegistry({
      tenants: {
        alpha: tenantOn('expired-keys'),
        beta: tenantOn('expired-keys'),
        gamma: tenantOn('expired-keys-unscripted'),
      },
    }),
  );
  previous = { log: serviceLog(), metrics: serviceMetrics() };
  const keep = (message: string, fields = {}) => void logged.push({ message, fields });
  useObservability({ log: { debug: keep, info: keep, warn: keep, error: keep } });
});
afterAll(async () => {
  if (previous) useObservability(previous);
  setTenantRegistry(undefined);
  unregisterEmbeddedDatabase('expired-keys');
  unregisterEmbeddedDatabase('expired-keys-unscripted');
  await unscripted?.close();
  await pg?.close();
});

describe("Exactly once's expired keys on the embedded database", () => {
  it('removes expired records only, in batches, and stops at its time budget', async () => {
    await checkExpiredKeysRemoved(db, createEmbeddedExpiredKeyStore(db));
  });

  it('the scheduled clean-up removes them once per database, and passes over a database without the table', async () => {
    await checkRetentionRun(db, logged, { shared: ['alpha', 'beta'], unscripted: 'gamma' });
  });

  it("removes the expired keys of a tenant's document database too (where setFile's keys commit)", async () => {
    const documents = await demoDatabase();
    registerEmbeddedDatabase('expired-keys-documents', documents.db);
    try {
      setTenantRegistry(
        parseTenantRegistry({
          tenants: {
            delta: {
              ...tenantOn('expired-keys'),
              documentDatabase: { kind: 'embedded', name: 'expired-keys-documents' },
            },
          },
        }),
      );
      const expired = await recordKeys(documents.db, 'delta', 2, -30);
      const live = await recordKeys(documents.db, 'delta', 1, 30);
      expect(await changeRetentionHandler()()).toMatchObject({ failed: 0 });
      expect(await stillRecorded(documents.db, expired)).toEqual([]);
      expect(await stillRecorded(documents.db, live)).toEqual(live);
    } finally {
      unregisterEmbeddedDatabase('expired-keys-documents');
      await documents.pg.close();
    }
  });
});
