import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMssqlDatabase } from '../../shared/adapters/mssql/index.js';
import { createMssqlSubscriptionStore } from '../../shared/adapters/mssql/subscription-store.js';
import { createMssqlWebhookDeliveryLog } from '../../shared/adapters/mssql/webhook-delivery-log.js';
import type { Database } from '../../shared/core/database.js';
import type { EndpointMemory } from '../../shared/core/webhook/delivery-log.js';
import { isBabelfish, runMssqlScripts, mssqlUrl as url } from '../support/mssql.js';
import { notificationLaneCases } from '../support/notification-lanes.js';
import { subscriptionRow } from '../support/subscriptions.js';

/**
 * Every record the service keeps is its tenant's (CONTRACT 4c), on a T-SQL database (the engine of
 * npm run test:tsql, or the SQL Server of MSSQL_URL): the scripts make the tables of a database of
 * before tenants' (no TENANT column, WEBHOOK_ENDPOINT keyed by subject alone) tenants' when they run
 * again, keeping the rows they hold (as no tenant's), and two tenants of one database then keep
 * each their own subscriptions and endpoint state for the same subject.
 */
describe.skipIf(!url)("Tenants' records on SQL Server (integration)", () => {
  let db: Database;

  beforeAll(async () => {
    db = createMssqlDatabase({ connectionString: url! });
    await runMssqlScripts(db);
  }, 300_000);

  afterAll(async () => {
    await db?.close();
  });

  /** Drops a TENANT column as before it existed (SQL Server: its default first; the engine keeps defaults apart from constraints). */
  async function dropTenantColumn(table: string) {
    if (!(await isBabelfish(db)))
      await db.query(`ALTER TABLE dbo.${table} DROP CONSTRAINT DF_${table}_TENANT`);
    await db.query(`ALTER TABLE dbo.${table} DROP COLUMN TENANT`);
  }

  const memory = (secret: string): EndpointMemory => ({
    webhookUrl: 'https://receiver.example/hook',
    secret,
    previousSecret: null,
    secretChangedAt: null,
    failingSince: null,
    disabledAt: null,
    enabledAt: Date.now(),
    slowSince: null,
  });

  it("keys WEBHOOK_ENDPOINT by tenant and subject once the scripts run over a database of before tenants'", async () => {
    // The table as the scripts of before made it, with a row of its own.
    await db.query('DROP TABLE dbo.WEBHOOK_ENDPOINT');
    await db.query(`CREATE TABLE dbo.WEBHOOK_ENDPOINT (
        SUBJECT_ID int NOT NULL, WEBHOOK_URL nvarchar(500) NULL, SECRET nvarchar(200) NULL,
        PREVIOUS_SECRET nvarchar(200) NULL, SECRET_CHANGED_AT datetime2(3) NULL,
        FAILING_SINCE datetime2(3) NULL, DISABLED_AT datetime2(3) NULL, ENABLED_AT datetime2(3) NOT NULL,
        CONSTRAINT PK_WEBHOOK_ENDPOINT PRIMARY KEY (SUBJECT_ID))`);
    await db.query(
      `INSERT INTO dbo.WEBHOOK_ENDPOINT (SUBJECT_ID, SECRET, ENABLED_AT) VALUES (1, N'old', SYSUTCDATETIME())`,
    );
    await dropTenantColumn('WEBHOOK_DELIVERY');

    await runMssqlScripts(db);

    expect(await db.query('SELECT TENANT AS tenant, SECRET AS secret FROM dbo.WEBHOOK_ENDPOINT')).toEqual([
      { tenant: '', secret: 'old' },
    ]);
    const [length] = await db.query("SELECT COL_LENGTH(N'dbo.WEBHOOK_DELIVERY', N'TENANT') AS length");
    expect(Number(length!.length)).toBe(126);
    // Subject 1 of each of two tenants: a memory each, neither the old row.
    const demo = createMssqlWebhookDeliveryLog(db, 'demo');
    const acme = createMssqlWebhookDeliveryLog(db, 'acme');
    await demo.rememberEndpoint(1, memory('demo-secret'), undefined);
    await acme.rememberEndpoint(1, memory('acme-secret'), undefined);
    const key = { eventId: 'msg_x', subjectId: 1, documentId: 1, messageId: 'm' };
    expect((await demo.findTarget(key)).endpoint?.secret).toBe('demo-secret');
    expect((await acme.findTarget(key)).endpoint?.secret).toBe('acme-secret');
    // One tenant's failures count against its own endpoint only.
    const at = Date.now();
    expect(await acme.endpointFailed(1, at, at)).toBe(true);
    expect((await acme.findTarget(key)).endpoint?.disabledAt).not.toBeNull();
    expect((await demo.findTarget(key)).endpoint?.disabledAt).toBeNull();
  }, 300_000);

  it("adds TENANT to SVC_SUBSCRIPTION of before, and each tenant's store sees its own subscriptions only", async () => {
    await db.query('DROP INDEX IX_SVC_SUBSCRIPTION_TENANT_OWNER ON dbo.SVC_SUBSCRIPTION');
    await dropTenantColumn('SVC_SUBSCRIPTION');
    await dropTenantColumn('SVC_NOTIFICATION_DELIVERY');
    const old = subscriptionRow({ owner: 'basic:probe' });
    await db.query(
      `INSERT INTO dbo.SVC_SUBSCRIPTION (ID, OWNER, SOURCE_SCHEMA, SOURCE_NAME, URL, SECRET, STATE, CREATED_AT,
        SEEN_BATCH, NOTIFIED_BATCH, CONSECUTIVE_FAILURES)
        VALUES (@p1, N'basic:probe', N'dbo', N'SUBJECT', N'https://x.example/', N'whsec_x', N'active',
        SYSUTCDATETIME(), 0, 0, 0)`,
      [old.id],
    );

    await runMssqlScripts(db);

    // A row of before is no tenant's: never served to one.
    const demo = createMssqlSubscriptionStore(db, 'demo');
    const acme = createMssqlSubscriptionStore(db, 'acme');
    expect(await demo.get(old.id)).toBeUndefined();
    const mine = subscriptionRow({ owner: 'basic:probe' });
    expect(await demo.create(mine, 1)).toBe('created');
    // The same user name in another tenant: a stranger there, with its own limit.
    expect(await acme.list('basic:probe')).toEqual([]);
    expect(await acme.get(mine.id, 'basic:probe')).toBeUndefined();
    expect(await acme.rotate(mine.id, 'basic:probe', 'whsec_new', Date.now())).toBeUndefined();
    expect(await acme.remove(mine.id, 'basic:probe')).toBe(false);
    expect(await acme.create(subscriptionRow({ owner: 'basic:probe' }), 1)).toBe('created');
    expect(await demo.create(subscriptionRow({ owner: 'basic:probe' }), 1)).toBe('limit');
    expect((await demo.get(mine.id, 'basic:probe'))?.secret).toBe(mine.secret);
    for (const store of [demo, acme]) {
      for (const s of await store.list('basic:probe')) await store.remove(s.id, 'basic:probe');
    }
    await db.query('DELETE FROM dbo.SVC_SUBSCRIPTION WHERE ID = @p1', [old.id]);
  }, 300_000);

  notificationLaneCases(() => createMssqlSubscriptionStore(db, 'lanes'), 'lanes');
});
