import { setTimeout as sleep } from 'node:timers/promises';
import sql from 'mssql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMssqlDatabase } from '../../shared/adapters/mssql/index.js';
import { MSSQL_SUBSCRIPTION_STATEMENTS } from '../../shared/adapters/mssql/subscription-store.js';
import { removeExpiredChanges } from '../../shared/core/data-api/changes.js';
import type { Database } from '../../shared/core/database.js';
import {
  enableSubscription,
  type SubscriptionContext,
} from '../../shared/core/notifications/subscriptions.js';
import { subscriptionStore } from '../../shared/lambda/notifications.js';
import {
  changeFeedContexts,
  changesPage,
  currentRows,
  restoredFeedCase,
  runChangeFeedModel,
  SyncClient,
  type WriterSession,
} from '../support/change-feed-model.js';
import { runMssqlScripts, mssqlUrl as url } from '../support/mssql.js';
import { runNotificationModel } from '../support/notification-model.js';
import { expectRestoredFeedRefused } from '../support/restored-feed.js';
import { subscriptionRow } from '../support/subscriptions.js';

/** A writer with a session of its own: its transaction stays open across the client's calls. */
async function sessionWriter(connectionString: string, pools: sql.ConnectionPool[]): Promise<WriterSession> {
  const pool = await new sql.ConnectionPool(connectionString).connect();
  pools.push(pool);
  let tx: sql.Transaction | undefined;
  return {
    async begin() {
      tx = new sql.Transaction(pool);
      await tx.begin();
    },
    async run(text, params) {
      const request = new sql.Request(tx!);
      params.forEach((value, index) => {
        request.input(`p${index + 1}`, value);
      });
      await request.query(text);
    },
    async end(commit) {
      const ending = tx;
      tx = undefined;
      if (commit) await ending?.commit();
      else await ending?.rollback();
    },
  };
}

// This run's own ids: the suites may run again on the same database (MSSQL_URL).
const ID = 2_000_000 + Math.floor(Math.random() * 100_000) * 10;
const BASE_SEED = Number(process.env.CHANGE_FEED_SEED ?? Math.floor(Math.random() * 2 ** 31));
const SEEDS = process.env.CHANGE_FEED_SEED ? 1 : 6;

// The change feed on a T-SQL database (the engine of npm run test:tsql, or MSSQL_URL): several
// sessions write at once and commit in another order than they began.
describe.skipIf(!url)('Change feed on SQL Server (integration)', () => {
  let db: Database;
  const pools: sql.ConnectionPool[] = [];
  const closing: Database[] = [];

  beforeAll(async () => {
    db = createMssqlDatabase({ connectionString: url! });
    await runMssqlScripts(db);
  }, 300_000);

  afterAll(async () => {
    for (const pool of pools) await pool.close();
    for (const other of closing) await other.close();
    await db?.close();
  });

  it('a transaction that wrote first and commits last reaches the next sync; a rolled-back one never does', async () => {
    const { ctx, feed } = changeFeedContexts(db);
    const client = new SyncClient(ctx, feed, 'SUBJECT', 500);
    await client.untilInSync();
    const early = await sessionWriter(url!, pools);
    const late = await sessionWriter(url!, pools);
    const undone = await sessionWriter(url!, pools);
    await early.begin();
    await early.run(`INSERT INTO dbo.SUBJECT (ID, NAZEV) VALUES (@p1, @p2)`, [ID + 1, 'Dlouhá transakce']);
    await undone.begin();
    await undone.run(`INSERT INTO dbo.SUBJECT (ID, NAZEV) VALUES (@p1, @p2)`, [ID + 3, 'Vrácená']);
    await late.begin();
    await late.run(`INSERT INTO dbo.SUBJECT (ID, NAZEV) VALUES (@p1, @p2)`, [ID + 2, 'Krátká transakce']);
    await late.end(true);
    await client.untilInSync();
    expect(client.copy.has(String(ID + 2))).toBe(true);
    expect(client.copy.has(String(ID + 1))).toBe(false);
    // Its change row was written before the other's, and is stamped only once it commits.
    await early.end(true);
    await undone.end(false);
    await client.untilInSync();
    expect(client.copy.get(String(ID + 1))).toMatchObject({ NAZEV: 'Dlouhá transakce' });
    expect(client.copy.has(String(ID + 3))).toBe(false);
    expect(client.copy).toEqual(await currentRows(ctx, 'SUBJECT'));
  });

  it(`model test: concurrent sessions, held-open transactions, rollbacks; the copy equals getData (${SEEDS} seeds from ${BASE_SEED}; CHANGE_FEED_SEED replays one)`, async () => {
    console.log(`change feed model test (T-SQL): seeds ${BASE_SEED}..${BASE_SEED + SEEDS - 1}`);
    let outOfOrder = 0;
    for (let i = 0; i < SEEDS; i++) {
      const writers: WriterSession[] = [];
      const run = await runChangeFeedModel({
        db,
        writer: async () => {
          const writer = await sessionWriter(url!, pools);
          writers.push(writer);
          return writer;
        },
        seed: BASE_SEED + i,
        steps: 140,
        writers: 3,
        firstId: 20_000 + i * 1000 + (BASE_SEED % 97) * 10_000,
        param: (index) => `@p${index}`,
      });
      outOfOrder += run.outOfOrder;
    }
    expect(outOfOrder).toBeGreaterThan(0);
  }, 300_000);

  it(`notifications model test: held-open sessions across notifier passes, rollbacks; every commit notified after it, one waiting at most, a receiver pulling only when notified keeps an exact copy (${SEEDS} seeds from ${BASE_SEED})`, async () => {
    console.log(`change notifications model test (T-SQL): seeds ${BASE_SEED}..${BASE_SEED + SEEDS - 1}`);
    let outOfOrder = 0;
    let notifications = 0;
    for (let i = 0; i < SEEDS; i++) {
      const run = await runNotificationModel({
        db,
        writer: async () => sessionWriter(url!, pools),
        seed: BASE_SEED + i,
        steps: 140,
        writers: 3,
        firstId: 60_000 + i * 1000 + (BASE_SEED % 97) * 10_000,
        param: (index) => `@p${index}`,
      });
      outOfOrder += run.outOfOrder;
      notifications += run.notifications;
    }
    expect(outOfOrder).toBeGreaterThan(0);
    expect(notifications).toBeGreaterThan(0);
  }, 300_000);

  it('change notifications: 64 creations at once in 8 sessions never pass maxSubscriptions (without the notifier row lock: 26 of 20)', async () => {
    const tenant = `limit-${Date.now()}`;
    const sessions = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const pool = createMssqlDatabase({ connectionString: url! });
        closing.push(pool);
        return subscriptionStore(pool, tenant);
      }),
    );
    const owner = `basic:${tenant}`;
    const made = () => subscriptionRow({ owner });
    const outcomes = await Promise.all(
      Array.from({ length: 64 }, (_, i) => sessions[i % sessions.length]!.create(made(), 20)),
    );
    expect(outcomes.filter((o) => o === 'created')).toHaveLength(20);
    const mine = await subscriptionStore(db, tenant).list(owner);
    expect(mine).toHaveLength(20);
    for (const s of mine) await subscriptionStore(db, tenant).remove(s.id, owner);
  });

  it('change notifications: an enable while the loop ends waits for the ending and then starts a pass (without the lock: no pass, none until the hourly backstop)', async () => {
    const tenant = `ending-${Date.now()}`;
    const store = subscriptionStore(db, tenant);
    const { feed } = changeFeedContexts(db);
    const owner = `basic:${tenant}`;
    const made = subscriptionRow({ owner });
    expect(await store.create(made, 1_000_000)).toBe('created');
    await db.query(
      `UPDATE dbo.SVC_SUBSCRIPTION SET STATE = 'disabled', WAITING_EVENT = NULL WHERE ID = @p1`,
      [made.id],
    );
    const delayMs = 10_000;
    const now = Date.now();
    // The loop's pass a moment ago found no live subscription and is ending: it holds the
    // notifier row, has counted none, and has not yet cleared its last pass.
    expect(await store.claimPass(now, now - delayMs)).toBe(true);
    const ending = await sessionWriter(url!, pools);
    await ending.begin();
    for (const statement of MSSQL_SUBSCRIPTION_STATEMENTS.lockNotifier) await ending.run(statement, [tenant]);
    const passes: string[] = [];
    const ctx: SubscriptionContext = {
      tenant,
      owner,
      store,
      feed: feed.store,
      queue: { notify: async () => undefined, pass: async (t) => void passes.push(t) },
      recorded: ['SUBJECT'],
      maxSubscriptions: 100,
      delayMs,
      allowPrivateTargets: false,
      forbiddenHost: async () => undefined,
      now: () => now + 1,
    };
    let enabled = false;
    const enabling = enableSubscription(ctx, made.id).then((view) => {
      enabled = true;
      return view;
    });
    await sleep(500);
    expect(enabled).toBe(false); // it waits for the ending's lock
    await ending.run(MSSQL_SUBSCRIPTION_STATEMENTS.endPasses, [tenant]);
    await ending.end(true);
    expect(await enabling).toMatchObject({ state: 'pending' });
    // The loop ended before the enable counted: the route starts one.
    expect(passes).toEqual([tenant]);
    await store.remove(made.id, owner);
  });

  it("db:apply gives a change table of an earlier version the writer's trace, losing no change; a transaction's writer is recorded and leaves the pooled session with it", async () => {
    // One connection, so that the write after the transaction runs on the transaction's session.
    const single = createMssqlDatabase({
      connectionString: url!,
      poolOwner: () => ({
        id: 'writer-trace',
        settings: { maxConnections: 1, acquireTimeoutMs: 5000, idleTimeoutMs: 60_000 },
      }),
    });
    closing.push(single);
    await db.query(
      `IF OBJECT_ID(N'dbo.TRACE_PROBE', N'U') IS NOT NULL EXEC dbo.SVC_CHANGE_FEED_DISABLE N'dbo', N'TRACE_PROBE'`,
    );
    await db.query(`IF OBJECT_ID(N'dbo.TRACE_PROBE', N'U') IS NOT NULL DROP TABLE dbo.TRACE_PROBE`);
    await db.query('CREATE TABLE dbo.TRACE_PROBE (ID int NOT NULL PRIMARY KEY, V int NULL)');
    await db.query(`EXEC dbo.SVC_CHANGE_FEED_ENABLE N'dbo', N'TRACE_PROBE'`);
    // The change table and trigger as the version before trace context made them.
    await db.query('DROP TRIGGER dbo.SVC_CHANGES_TRACE_PROBE_TRG');
    await db.query('ALTER TABLE dbo.SVC_CHANGES_TRACE_PROBE DROP COLUMN TRACEPARENT');
    await db.query(
      'CREATE TRIGGER dbo.SVC_CHANGES_TRACE_PROBE_TRG ON dbo.TRACE_PROBE AFTER INSERT, UPDATE, DELETE AS BEGIN SET NOCOUNT ON; ' +
        'INSERT INTO dbo.SVC_CHANGES_TRACE_PROBE (ID) SELECT ID FROM inserted UNION SELECT ID FROM deleted; END',
    );
    await db.query('INSERT INTO dbo.TRACE_PROBE (ID, V) VALUES (1, 1)');
    await runMssqlScripts(db);
    const writer = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    await single.transaction(
      async (tx) => {
        await tx.query('INSERT INTO dbo.TRACE_PROBE (ID, V) VALUES (2, 1)');
        await tx.query('UPDATE dbo.TRACE_PROBE SET V = 2 WHERE ID = 1');
      },
      { writer },
    );
    // A transaction that fails leaves no writer behind either.
    await expect(
      single.transaction(
        async (tx) => {
          await tx.query('INSERT INTO dbo.TRACE_PROBE (ID, V) VALUES (3, 1)');
          await tx.query('INSERT INTO dbo.TRACE_PROBE (ID, V) VALUES (3, 1)');
        },
        { writer },
      ),
    ).rejects.toThrow();
    await single.query('INSERT INTO dbo.TRACE_PROBE (ID, V) VALUES (4, 1)');
    await single.transaction(async (tx) => tx.query('INSERT INTO dbo.TRACE_PROBE (ID, V) VALUES (5, 1)'));
    const recorded = await db.query(
      'SELECT ID AS id, TRACEPARENT AS traceparent FROM dbo.SVC_CHANGES_TRACE_PROBE ORDER BY CHANGE_ID',
    );
    expect(recorded).toEqual([
      { id: 1, traceparent: null },
      { id: 2, traceparent: writer },
      { id: 1, traceparent: writer },
      { id: 4, traceparent: null },
      { id: 5, traceparent: null },
    ]);
    // What the notifier's pass reads of a range of batches: each writer once.
    const { feed } = changeFeedContexts(db);
    const state = await feed.store.stamp({
      schema: 'dbo',
      name: 'TRACE_PROBE',
      kind: 'table',
      columns: [],
      primaryKey: [],
    });
    expect(
      await feed.store.writers({ schema: 'dbo', name: 'TRACE_PROBE' }, { from: 0, to: state!.lastBatch }, 32),
    ).toEqual([writer]);
    await db.query(`EXEC dbo.SVC_CHANGE_FEED_DISABLE N'dbo', N'TRACE_PROBE'`);
    await db.query('DROP TABLE dbo.TRACE_PROBE');
  });

  it('db:apply again keeps the recording and its tokens; the retention clean-up removes what is old', async () => {
    const { ctx, feed } = changeFeedContexts(db);
    let page = await changesPage(ctx, feed, 'SUBJECT', { rows: '1000' });
    while (page.rel === 'next')
      page = await changesPage(ctx, feed, 'SUBJECT', { token: page.token, rows: '1000' });
    await runMssqlScripts(db);
    await db.query(`INSERT INTO dbo.SUBJECT (ID, NAZEV, MESTO) VALUES (${ID + 4}, N'Znovu', N'Tábor')`);
    const after = await changesPage(ctx, feed, 'SUBJECT', { token: page.token });
    expect(after.records).toEqual([expect.objectContaining({ ID: ID + 4, MESTO: 'Tábor' })]);
    const outcomes = await removeExpiredChanges(db, feed.store, ['SUBJECT'], 0, Date.now() + 60_000);
    expect(outcomes[0]!.removed).toBeGreaterThan(0);
    expect(await db.query(`SELECT COUNT(*) AS n FROM dbo.SVC_CHANGES_SUBJECT`)).toEqual([{ n: 0 }]);
    await expect(changesPage(ctx, feed, 'SUBJECT', { token: page.token })).rejects.toMatchObject({
      status: 410,
      code: 'sync_token_expired',
    });
  });

  it('a token of batches the feed no longer has (the database restored from a backup or reset) is 410, not an empty page that moves the client back', async () => {
    expectRestoredFeedRefused(await restoredFeedCase(db, ID + 100));
  });
});
