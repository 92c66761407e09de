import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMssqlDatabase } from '../../shared/adapters/mssql/index.js';
import { createMssqlWebhookAdminStore } from '../../shared/adapters/mssql/webhook-admin-store.js';
import { createMssqlWebhookDeliveryLog } from '../../shared/adapters/mssql/webhook-delivery-log.js';
import type { Database } from '../../shared/core/database.js';
import type { WebhookDeliveryLog } from '../../shared/core/webhook/delivery-log.js';
import { runMssqlScripts, mssqlUrl as url } from '../support/mssql.js';
import { endpointStateCases } from '../support/webhook-endpoint-state.js';
import { recoverClaimCases } from '../support/webhook-recover-claims.js';
import { sendingClaimCases } from '../support/webhook-sending-claims.js';

// WEBHOOK_DELIVERY on a T-SQL database (the engine of npm run test:tsql, or the SQL Server of
// MSSQL_URL): attempts are counted per queue message, and 040-webhook.sql adds MESSAGE_ID to a
// table created before it existed.
describe.skipIf(!url)('Webhook delivery log on SQL Server (integration)', () => {
  let db: Database;
  let log: WebhookDeliveryLog;

  beforeAll(async () => {
    db = createMssqlDatabase({ connectionString: url! });
    await runMssqlScripts(db);
    log = createMssqlWebhookDeliveryLog(db, 'demo');
  }, 300_000);

  afterAll(async () => {
    await db?.close();
  });

  it('adds MESSAGE_ID to a WEBHOOK_DELIVERY of the first release when the scripts run again', async () => {
    await db.query('ALTER TABLE dbo.WEBHOOK_DELIVERY DROP COLUMN MESSAGE_ID');
    expect(await db.query("SELECT COL_LENGTH(N'dbo.WEBHOOK_DELIVERY', N'MESSAGE_ID') AS length")).toEqual([
      { length: null },
    ]);
    await runMssqlScripts(db);
    const [column] = await db.query("SELECT COL_LENGTH(N'dbo.WEBHOOK_DELIVERY', N'MESSAGE_ID') AS length");
    // nvarchar(100): 200 bytes.
    expect(Number(column!.length)).toBe(200);
  }, 300_000);

  it("accepts the outcomes disabled and resent once the scripts run again over the first release's constraint", async () => {
    await db.query('ALTER TABLE dbo.WEBHOOK_DELIVERY DROP CONSTRAINT CK_WEBHOOK_DELIVERY_OUTCOME');
    await db.query(`ALTER TABLE dbo.WEBHOOK_DELIVERY ADD CONSTRAINT CK_WEBHOOK_DELIVERY_OUTCOME CHECK (OUTCOME IN (
      N'delivered', N'retrying', N'failed', N'gone', N'refused', N'skipped', N'duplicate', N'unknown_subject'))`);
    const row = {
      eventId: 'msg_outcomes',
      subjectId: 1,
      documentId: 1,
      messageId: 'm',
      attempt: 1,
      attemptedAt: Date.now(),
    };
    await expect(log.record({ ...row, outcome: 'disabled' })).rejects.toThrow();
    await runMssqlScripts(db);
    await log.record({ ...row, outcome: 'disabled' });
    await log.record({ ...row, outcome: 'resent' });
    // Still a constraint: an outcome nobody knows is refused.
    await expect(log.record({ ...row, outcome: 'lost' as never })).rejects.toThrow();
  }, 300_000);

  endpointStateCases(() => ({ db, log }), 42);
  // Three sessions (three pools), as three instances of the admin function would have.
  const sessions: Database[] = [];
  afterAll(async () => Promise.all(sessions.map((session) => session.close())));
  recoverClaimCases(
    () => ({
      db,
      log,
      stores: () => {
        while (sessions.length < 3) sessions.push(createMssqlDatabase({ connectionString: url! }));
        return sessions.map((session) => createMssqlWebhookAdminStore(session, 'demo'));
      },
    }),
    44,
  );

  // Twelve sessions (twelve pools), as twelve instances of the webhook function would have.
  const claimers: Database[] = [];
  afterAll(async () => Promise.all(claimers.map((session) => session.close())));
  sendingClaimCases(() => ({
    logs: (count) => {
      while (claimers.length < count) claimers.push(createMssqlDatabase({ connectionString: url! }));
      return claimers.slice(0, count).map((session) => createMssqlWebhookDeliveryLog(session, 'demo'));
    },
    other: createMssqlWebhookDeliveryLog(db, 'other'),
  }));

  it('counts the retrying and failed attempts of one message, apart from other copies of the event', async () => {
    const documentId = Date.now();
    const row = { eventId: `msg_tsql-${documentId}`, subjectId: 1, documentId, attemptedAt: Date.now() };
    const key = { eventId: row.eventId, subjectId: 1, documentId };
    await log.record({
      ...row,
      messageId: 'first',
      attempt: 1,
      outcome: 'retrying',
      httpStatus: 500,
      retryInSeconds: 5,
    });
    await log.record({ ...row, messageId: 'first', attempt: 2, outcome: 'failed', httpStatus: 500 });
    await log.record({ ...row, messageId: 'second', attempt: 1, outcome: 'retrying', error: 'ECONNREFUSED' });
    await log.record({ ...row, messageId: 'second', attempt: 2, outcome: 'delivered', httpStatus: 200 });
    expect(await log.findTarget({ ...key, messageId: 'first' })).toMatchObject({
      alreadyDelivered: true,
      attemptsMade: 2,
      subject: expect.objectContaining({ webhookUrl: expect.any(String) }),
    });
    expect((await log.findTarget({ ...key, messageId: 'second' })).attemptsMade).toBe(1);
    expect((await log.findTarget({ ...key, messageId: 'redriven' })).attemptsMade).toBe(0);
    const rows = await db.query(
      'SELECT MESSAGE_ID AS messageId, ATTEMPT AS attempt, OUTCOME AS outcome FROM dbo.WEBHOOK_DELIVERY WHERE EVENT_ID = @p1 ORDER BY ID',
      [row.eventId],
    );
    expect(rows).toEqual([
      { messageId: 'first', attempt: 1, outcome: 'retrying' },
      { messageId: 'first', attempt: 2, outcome: 'failed' },
      { messageId: 'second', attempt: 1, outcome: 'retrying' },
      { messageId: 'second', attempt: 2, outcome: 'delivered' },
    ]);
  });
});
