import type { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getChanges, removeExpiredChanges } from '../../shared/core/data-api/changes.js';
import type { Database } from '../../shared/core/database.js';
import { ServiceError } from '../../shared/core/errors.js';
import {
  changeFeedContexts,
  changesPage,
  currentRows,
  deferredWriter,
  restoredFeedCase,
  runChangeFeedModel,
  SyncClient,
} from '../support/change-feed-model.js';
import { demoDatabase } from '../support/demo.js';
import { memoryObjectStore } from '../support/memory-stores.js';
import { runNotificationModel } from '../support/notification-model.js';
import { expectRestoredFeedRefused } from '../support/restored-feed.js';

const DAY = 86_400_000;

/** The refusal getChanges answers, as `status code`. */
async function refusal(run: () => Promise<unknown>): Promise<string> {
  try {
    await run();
  } catch (error) {
    if (error instanceof ServiceError) return `${error.status} ${error.code}`;
    throw error;
  }
  return 'answered';
}

// The model test's seeds: CHANGE_FEED_SEED replays one; otherwise a random base, printed.
const BASE_SEED = Number(process.env.CHANGE_FEED_SEED ?? Math.floor(Math.random() * 2 ** 31));
const SEEDS = process.env.CHANGE_FEED_SEED ? 1 : 12;

describe('Change feed on the embedded database', () => {
  let pg: PGlite;
  let db: Database;

  beforeAll(async () => {
    ({ pg, db } = await demoDatabase());
  });
  afterAll(async () => {
    await pg.close();
  });

  it(`model test: random writers, rollbacks and out-of-order commits, a client following the links; its copy equals getData (${SEEDS} seeds from ${BASE_SEED}; CHANGE_FEED_SEED replays one)`, async () => {
    console.log(`change feed model test (embedded): seeds ${BASE_SEED}..${BASE_SEED + SEEDS - 1}`);
    let outOfOrder = 0;
    let rollbacks = 0;
    let tombstones = 0;
    for (let i = 0; i < SEEDS; i++) {
      const run = await runChangeFeedModel({
        db,
        writer: async () => deferredWriter(db),
        seed: BASE_SEED + i,
        steps: 160,
        writers: 3,
        firstId: 10_000 + i * 1000,
        param: (index) => `$${index}`,
      });
      outOfOrder += run.outOfOrder;
      rollbacks += run.rollbacks;
      tombstones += run.tombstones;
    }
    // The runs did what they are for: commits out of order, rollbacks, deletions seen.
    expect(outOfOrder).toBeGreaterThan(0);
    expect(rollbacks).toBeGreaterThan(0);
    expect(tombstones).toBeGreaterThan(0);
  }, 240_000);

  it(`notifications model test: passes, deliveries and writers interleaved; every commit notified after it, one notification waiting at most, a receiver pulling only when notified keeps an exact copy (${SEEDS} seeds from ${BASE_SEED})`, async () => {
    console.log(`change notifications model test (embedded): seeds ${BASE_SEED}..${BASE_SEED + SEEDS - 1}`);
    let notifications = 0;
    let commits = 0;
    for (let i = 0; i < SEEDS; i++) {
      const run = await runNotificationModel({
        db,
        writer: async () => deferredWriter(db),
        seed: BASE_SEED + i,
        steps: 160,
        writers: 3,
        firstId: 40_000 + i * 1000,
        param: (index) => `$${index}`,
      });
      notifications += run.notifications;
      commits += run.commits;
    }
    // Coalesced: fewer notifications than commits over the seeds, and some.
    expect(notifications).toBeGreaterThan(0);
    expect(notifications).toBeLessThan(commits);
  }, 120_000);

  it("a transaction's writer is recorded with its changes, for its length only; the pass reads each writer once", async () => {
    const { feed } = changeFeedContexts(db);
    const source = { schema: 'dbo', name: 'SUBJECT', kind: 'table' as const, columns: [], primaryKey: [] };
    const before = (await feed.store.stamp(source))!.lastBatch;
    const writer = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const id = 3_900_000 + Math.floor(Math.random() * 10_000) * 10;
    await db.transaction(
      async (tx) => {
        await tx.query('INSERT INTO dbo."SUBJECT" ("ID", "NAZEV") VALUES ($1, $2)', [id, 'Writer']);
        await tx.query('UPDATE dbo."SUBJECT" SET "NAZEV" = $2 WHERE "ID" = $1', [id, 'Writer 2']);
      },
      { writer },
    );
    await db.query('INSERT INTO dbo."SUBJECT" ("ID", "NAZEV") VALUES ($1, $2)', [id + 1, 'ERP']);
    await db.transaction((tx) => tx.query('DELETE FROM dbo."SUBJECT" WHERE "ID" = $1', [id + 1]));
    const recorded = await db.query(
      'SELECT "ID" AS id, "TRACEPARENT" AS traceparent FROM dbo."SVC_CHANGES_SUBJECT" WHERE "ID" IN ($1, $2) ORDER BY "ID", "TRACEPARENT"',
      [id, id + 1],
    );
    expect(recorded).toEqual([
      { id, traceparent: writer },
      { id, traceparent: writer },
      { id: id + 1, traceparent: null },
      { id: id + 1, traceparent: null },
    ]);
    const after = (await feed.store.stamp(source))!.lastBatch;
    expect(await feed.store.writers(source, { from: before, to: after }, 32)).toEqual([writer]);
    expect(await feed.store.writers(source, { from: after, to: after }, 32)).toEqual([]);
  });

  it("refuses a table whose derived names would pass PostgreSQL's 63 bytes, naming it and the limit; 42 bytes record", async () => {
    // Before: a 50-byte name cut three trigger names to one, and the engine's "already exists" came out.
    const table = (length: number) => `T${'X'.repeat(length - 1)}`;
    for (const length of [42, 43, 50])
      await pg.exec(`CREATE TABLE dbo."${table(length)}" ("ID" int PRIMARY KEY)`);
    await pg.query(`SELECT dbo.svc_change_feed_enable('dbo', $1)`, [table(42)]);
    await pg.exec(
      `INSERT INTO dbo."${table(42)}" VALUES (1); UPDATE dbo."${table(42)}" SET "ID" = 2; DELETE FROM dbo."${table(42)}"`,
    );
    const { rows } = await pg.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM dbo."SVC_CHANGES_${table(42)}"`,
    );
    expect(rows).toEqual([{ n: 4 }]);
    for (const length of [43, 50]) {
      await expect(pg.query(`SELECT dbo.svc_change_feed_enable('dbo', $1)`, [table(length)])).rejects.toThrow(
        `svc_change_feed_enable: the change feed cannot record table ${table(length)}: its name has ${length} bytes, and the names derived from it (the longest, IX_SVC_CHANGES_<table>_BATCH, 21 more) would pass the limit of 63 bytes: a recorded table's name may have at most 42 bytes`,
      );
      const recorded = await pg.query(`SELECT 1 FROM dbo."SVC_CHANGE_FEED" WHERE "SOURCE_NAME" = $1`, [
        table(length),
      ]);
      expect(recorded.rows).toEqual([]);
    }
  });

  it('the first call reads the rows in key order, paged with next links and a sync link at the end', async () => {
    const { ctx, feed } = changeFeedContexts(db);
    const first = await changesPage(ctx, feed, 'SUBJECT', { rows: '25' });
    expect(first.rel).toBe('next');
    expect(first.records.map((r) => r.ID)).toEqual(
      [...first.records.map((r) => r.ID)].sort((a, b) => Number(a) - Number(b)),
    );
    const client = new SyncClient(ctx, feed, 'SUBJECT', 25);
    await client.untilInSync();
    expect(client.copy).toEqual(await currentRows(ctx, 'SUBJECT'));
    // Nothing changed: an empty page with a sync link.
    const { ctx: c2, feed: f2 } = changeFeedContexts(db);
    let token = first.token;
    let page = first;
    while (page.rel === 'next') {
      page = await changesPage(c2, f2, 'SUBJECT', { token, rows: '25' });
      token = page.token;
    }
    const quiet = await changesPage(c2, f2, 'SUBJECT', { token });
    expect(quiet).toMatchObject({ records: [], rel: 'sync' });
  });

  it('a page over the inline limit is cut at fewer rows, inline, and its next link goes on: never a redirect', async () => {
    const { ctx, feed } = changeFeedContexts(db);
    // About four SUBJECT records fit; a page of 50 is asked for.
    const small = {
      ...ctx,
      limits: { ...ctx.limits, inlineLimitBytes: 1600, store: memoryObjectStore().store },
    };
    const client = new SyncClient(small, feed, 'SUBJECT', 50);
    const sizes: number[] = [];
    for (let call = 0; call < 1000; call++) {
      const before = client.copy.size;
      const inSync = await client.step();
      sizes.push(client.copy.size - before);
      if (inSync) break;
    }
    // Every page inline (changesPage throws on a redirect), each within the limit, and the
    // cut pages followed by their next link to the same copy as one large page gives.
    expect(Math.max(...sizes)).toBeLessThan(50);
    expect(client.calls).toBeGreaterThan(5);
    expect(client.copy).toEqual(await currentRows(ctx, 'SUBJECT'));
  });

  it('a single record larger than the inline limit alone is stored and linked on, alone on its page', async () => {
    const { ctx, feed } = changeFeedContexts(db);
    const objects = memoryObjectStore();
    const tiny = { ...ctx, limits: { ...ctx.limits, inlineLimitBytes: 40, store: objects.store } };
    const { answer, link } = await getChanges(tiny, feed, 'SUBJECT', { rows: '10' });
    expect(answer.kind).toBe('redirect');
    expect(link.rel).toBe('next');
    const stored = Buffer.concat([...objects.objects.values()][0]!.chunks).toString('utf8');
    expect((JSON.parse(stored) as Record<string, unknown[]>).SUBJECT).toHaveLength(1);
  });

  it('a change is its current record, a deletion a tombstone with the key; hidden columns in neither', async () => {
    const { ctx, feed } = changeFeedContexts(db);
    const client = new SyncClient(ctx, feed, 'SUBJECT', 1000);
    await client.untilInSync();
    // Rows of this test's own (the model test may have deleted any demo row).
    await db.query(
      `INSERT INTO dbo."SUBJECT" ("ID", "NAZEV", "SECRET_WEBHOOK") VALUES (900001, 'Tombstone s.r.o.', 'tajne')`,
    );
    await db.query(
      `INSERT INTO dbo."SUBJECT" ("ID", "NAZEV", "SECRET_WEBHOOK") VALUES (900002, 'Změna s.r.o.', 'tajne')`,
    );
    const page = await (async () => {
      const start = await changesPage(ctx, feed, 'SUBJECT', { rows: '1000' });
      let p = start;
      while (p.rel === 'next') p = await changesPage(ctx, feed, 'SUBJECT', { token: p.token, rows: '1000' });
      await db.query(`DELETE FROM dbo."SUBJECT" WHERE "ID" = 900001`);
      await db.query(`UPDATE dbo."SUBJECT" SET "MESTO" = 'Jihlava' WHERE "ID" = 900002`);
      return changesPage(ctx, feed, 'SUBJECT', { token: p.token });
    })();
    expect(page.rel).toBe('sync');
    expect(page.records).toEqual([
      { ID: 900001, '@removed': { reason: 'deleted' } },
      { ID: 900002, NAZEV: 'Změna s.r.o.', MESTO: 'Jihlava', AKTIVNI: 1 },
    ]);
    for (const record of page.records) expect(record).not.toHaveProperty('SECRET_WEBHOOK');
  });

  it('columns= gives only those columns and always the key; a token is bound to its columns', async () => {
    const { ctx, feed } = changeFeedContexts(db);
    const first = await changesPage(ctx, feed, 'DOKUMENT', { rows: '3', columns: 'CISLO,castka_celkem' });
    expect(first.records[0]).toEqual({ CISLO: expect.any(String), CASTKA_CELKEM: expect.any(Number), ID: 1 });
    const next = await changesPage(ctx, feed, 'DOKUMENT', {
      token: first.token,
      rows: '3',
      columns: 'CISLO,castka_celkem',
    });
    expect(next.records.map((r) => r.ID)).toEqual([4, 5, 6]);
    expect(await refusal(() => getChanges(ctx, feed, 'DOKUMENT', { token: first.token }))).toBe(
      '400 invalid_sync_token',
    );
    expect(
      await refusal(() => getChanges(ctx, feed, 'DOKUMENT', { token: first.token, columns: 'CISLO' })),
    ).toBe('400 invalid_sync_token');
    expect(await refusal(() => getChanges(ctx, feed, 'SUBJECT', { columns: 'SECRET_WEBHOOK' }))).toBe(
      '400 invalid_columns',
    );
  });

  it('an altered token, one of another source or another tenant is 400 invalid_sync_token', async () => {
    const { ctx, feed } = changeFeedContexts(db);
    const { token } = await changesPage(ctx, feed, 'SUBJECT', { rows: '5' });
    const [payload, mac] = token.split('.') as [string, string];
    const state = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    const forged = `${Buffer.from(JSON.stringify({ ...state, b: 0 })).toString('base64url')}.${mac}`;
    const flipped = `${payload}.${mac.startsWith('A') ? 'B' : 'A'}${mac.slice(1)}`;
    for (const bad of [forged, flipped, 'x', `${payload}.`, '', `${token}x`]) {
      expect(await refusal(() => getChanges(ctx, feed, 'SUBJECT', { token: bad }))).toBe(
        '400 invalid_sync_token',
      );
    }
    expect(await refusal(() => getChanges(ctx, feed, 'DOKUMENT', { token }))).toBe('400 invalid_sync_token');
    const other = changeFeedContexts(db, { tenant: 'other' });
    expect(await refusal(() => getChanges(other.ctx, other.feed, 'SUBJECT', { token }))).toBe(
      '400 invalid_sync_token',
    );
  });

  it('a token older than the retention, or whose changes were removed or whose recording restarted, is 410', async () => {
    let now = Date.now();
    const { ctx, feed } = changeFeedContexts(db, { now: () => now, retentionDays: 7 });
    const client = new SyncClient(ctx, feed, 'SUBJECT', 1000);
    await client.untilInSync();
    let page = await changesPage(ctx, feed, 'SUBJECT', { rows: '1000' });
    while (page.rel === 'next')
      page = await changesPage(ctx, feed, 'SUBJECT', { token: page.token, rows: '1000' });
    const token = page.token;
    now += 7 * DAY + 1000;
    expect(await refusal(() => getChanges(ctx, feed, 'SUBJECT', { token }))).toBe('410 sync_token_expired');
    now -= 7 * DAY + 1000;
    expect(await refusal(() => getChanges(ctx, feed, 'SUBJECT', { token }))).toBe('answered');

    // The retention clean-up removes what was stamped before its time: a token from before is 410.
    await db.query(
      `INSERT INTO dbo."SUBJECT" ("ID", "NAZEV", "MESTO") VALUES (900003, 'Retence a.s.', 'Cheb')`,
    );
    const afterChange = await changesPage(ctx, feed, 'SUBJECT', { token });
    expect(afterChange.records).toEqual([expect.objectContaining({ ID: 900003, MESTO: 'Cheb' })]);
    const before = (await db.query(`SELECT count(*)::int AS n FROM dbo."SVC_CHANGES_SUBJECT"`))[0]!
      .n as number;
    expect(before).toBeGreaterThan(0);
    const outcomes = await removeExpiredChanges(
      db,
      feed.store,
      ['SUBJECT', 'NO_SUCH_TABLE', 'UCET'],
      0,
      Date.now() + 60_000,
    );
    expect(outcomes).toEqual([
      { source: 'SUBJECT', removed: before },
      { source: 'NO_SUCH_TABLE', problem: 'no such table in the database' },
      { source: 'UCET', problem: 'its changes are not recorded in the database' },
    ]);
    expect((await db.query(`SELECT count(*)::int AS n FROM dbo."SVC_CHANGES_SUBJECT"`))[0]!.n).toBe(0);
    expect(await refusal(() => getChanges(ctx, feed, 'SUBJECT', { token }))).toBe('410 sync_token_expired');
    // A new sync starts whatever was removed before it.
    expect(await refusal(() => getChanges(ctx, feed, 'SUBJECT', {}))).toBe('answered');
    // The token of the last page is still good: nothing after it was removed.
    expect(await refusal(() => getChanges(ctx, feed, 'SUBJECT', { token: afterChange.token }))).toBe(
      'answered',
    );

    // Recording turned off and on again: the earlier tokens are 410, a new sync works.
    await db.query(`SELECT dbo.svc_change_feed_disable('dbo', 'SUBJECT')`);
    expect(await refusal(() => getChanges(ctx, feed, 'SUBJECT', { token: afterChange.token }))).toBe(
      '410 sync_token_expired',
    );
    expect(await refusal(() => getChanges(ctx, feed, 'SUBJECT', {}))).toBe('400 changes_not_recorded');
    await db.query(`SELECT dbo.svc_change_feed_enable('dbo', 'SUBJECT')`);
    expect(await refusal(() => getChanges(ctx, feed, 'SUBJECT', { token: afterChange.token }))).toBe(
      '410 sync_token_expired',
    );
    const again = new SyncClient(ctx, feed, 'SUBJECT', 1000);
    await again.untilInSync();
    expect(again.copy).toEqual(await currentRows(ctx, 'SUBJECT'));
  });

  it('a token of batches the feed no longer has (the database restored from a backup or reset) is 410, not an empty page that moves the client back', async () => {
    expectRestoredFeedRefused(
      await restoredFeedCase(db, 3_800_000 + Math.floor(Math.random() * 10_000) * 10),
    );
  });

  it('a source not in changeFeed is 400 changes_not_recorded; one not allowed or unknown is 404; bad rows 400', async () => {
    const { ctx, feed } = changeFeedContexts(db);
    expect(await refusal(() => getChanges(ctx, feed, 'UCET', {}))).toBe('400 changes_not_recorded');
    expect(await refusal(() => getChanges(ctx, feed, 'V_DOKUMENT_SOUBOR', {}))).toBe(
      '400 changes_not_recorded',
    );
    expect(await refusal(() => getChanges(ctx, feed, 'NO_SUCH', {}))).toBe('404 data_source_not_found');
    expect(await refusal(() => getChanges(ctx, feed, 'SVC_CHANGES_SUBJECT', {}))).toBe(
      '404 data_source_not_found',
    );
    expect(await refusal(() => getChanges(ctx, feed, 'SVC_CHANGE_FEED', {}))).toBe(
      '404 data_source_not_found',
    );
    expect(await refusal(() => getChanges({ ...ctx, allowed: ['UCET'] }, feed, 'SUBJECT', {}))).toBe(
      '404 data_source_not_found',
    );
    for (const rows of ['0', '10001', 'x', '']) {
      expect(await refusal(() => getChanges(ctx, feed, 'SUBJECT', { rows }))).toBe('400 invalid_paging');
    }
    // A hidden key cannot be followed: its values would be in every record and tombstone.
    expect(
      await refusal(() => getChanges({ ...ctx, hidden: { SUBJECT: ['ID'] } }, feed, 'SUBJECT', {})),
    ).toBe('400 changes_not_recorded');
  });
});
