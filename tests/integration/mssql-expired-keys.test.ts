import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { withDatabase } from '../../infra/local/tsql-engine.js';
import { createMssqlExpiredKeyStore } from '../../shared/adapters/mssql/expired-key-store.js';
import { createMssqlDatabase } from '../../shared/adapters/mssql/index.js';
import { openDatabase } from '../../shared/config/databases.js';
import { setTenantRegistry } from '../../shared/config/tenant-registry.js';
import { type DatabaseConnection, parseTenantRegistry } from '../../shared/config/tenants.js';
import type { Database } from '../../shared/core/database.js';
import { serviceLog, serviceMetrics, useObservability } from '../../shared/lambda/observability.js';
import { checkExpiredKeysRemoved, checkRetentionRun, type KeptLog } from '../support/expired-keys.js';
import { runMssqlScripts, mssqlUrl as url } from '../support/mssql.js';

// Exactly once's retention (CONTRACT 5a) on a T-SQL database (the engine of npm run test:tsql, or
// MSSQL_URL); the embedded twin is expired-keys.test.ts.
describe.skipIf(!url)("Exactly once's expired keys on SQL Server (integration)", () => {
  // A database of the same server whose scripts were not applied (yet): no dbo.SVC_IDEMPOTENCY.
  const unscriptedName = `svc_keys_${randomBytes(4).toString('hex')}`;
  let server: Database;
  let db: Database;
  const logged: KeptLog = [];
  let previous: { log: ReturnType<typeof serviceLog>; metrics: ReturnType<typeof serviceMetrics> };
  const HASH = 'scrypt$16384$8$1$ZGVtby10ZW5hbnQtc2FsdA==$x2bp48ourmNi7AJz+st/kNLkTjPJ/XnX7NIpiDrZ8ig=';
  // Made when the suite runs (its describe is read even where it is skipped, without MSSQL_URL).
  const shared: DatabaseConnection = { kind: 'mssql', connectionString: url ?? '' };
  const unscripted: DatabaseConnection = {
    kind: 'mssql',
    connectionString: url ? withDatabase(url, unscriptedName) : '',
  };
  const tenantOn = (database: DatabaseConnection) => ({
    database,
    dataApiUsers: [{ name: 'demo', passwordHash: HASH }],
    dataSources: '*',
  });

  beforeAll(async () => {
    server = createMssqlDatabase({ connectionString: url! });
    await runMssqlScripts(server);
    await server.query(`CREATE DATABASE ${unscriptedName}`);
    // The tenants' connections, as the clean-up opens them: two tenants on one database.
    setTenantRegistry(
      parseTenantRegistry({
        tenants: { alpha: tenantOn(shared), beta: tenantOn(shared), gamma: tenantOn(unscripted) },
      }),
    );
    db = await openDatabase(shared);
    previous = { log: serviceLog(), metrics: serviceMetrics() };
    const keep = (message: string, fields = {}) => void logged.push({ message, fields });
    useObservability({ log: { debug: keep, info: keep, warn: keep, error: keep } });
  }, 300_000);
  afterAll(async () => {
    if (previous) useObservability(previous);
    setTenantRegistry(undefined);
    for (const connection of [shared, unscripted]) await (await openDatabase(connection)).close();
    await server?.query(`DROP DATABASE IF EXISTS ${unscriptedName}`).catch(() => undefined);
    await server?.close();
  });

  it('removes expired records only, in batches of DELETE TOP, and stops at its time budget', async () => {
    await checkExpiredKeysRemoved(db, createMssqlExpiredKeyStore(db));
  });

  it('the scheduled clean-up removes them once per database, and passes over a database without the table', async () => {
    await checkRetentionRun(db, logged, { shared: ['alpha', 'beta'], unscripted: 'gamma' });
  });
});
