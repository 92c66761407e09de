/**
 * The change notifications' model test (CONTRACT 4c), for either database: the change feed model's
 * writers (inserts, updates, deletes, rollbacks, transactions that commit in another order than
 * they began; on the T-SQL engine held open across notifier passes) beside the notifier's passes
 * and a receiver that pulls with its own sync link only when a notification is delivered to it.
 * Checked: every commit is followed by a notification made by a pass that began after it (so its
 * delivery starts after the change is visible to getChanges); at most one notification is ever
 * waiting (coalesced); and the receiver's copy, kept only by pulling on notifications, equals
 * getData at the end. Every step is drawn from a seeded random source, so a failing seed replays.
 */
import type { Database } from '../../shared/core/database.js';
import { notifierPass } from '../../shared/core/notifications/notifier.js';
import {
  type NotificationMessage,
  newEventId,
  newSubscriptionId,
} from '../../shared/core/notifications/subscriptions.js';
import { subscriptionStore } from '../../shared/lambda/notifications.js';
import {
  changeFeedContexts,
  currentRows,
  SyncClient,
  seededRandom,
  type WriterFactory,
} from './change-feed-model.js';
import { subscriptionRow } from './subscriptions.js';

export interface NotificationModelRun {
  readonly seed: number;
  readonly commits: number;
  readonly rollbacks: number;
  readonly outOfOrder: number;
  readonly passes: number;
  readonly notifications: number;
}

const DELAY_MS = 10_000;

export async function runNotificationModel(options: {
  db: Database;
  writer: WriterFactory;
  seed: number;
  steps: number;
  writers: number;
  firstId: number;
  param: (index: number) => string;
}): Promise<NotificationModelRun> {
  const { db, seed, steps, writers, param } = options;
  const random = seededRandom(seed);
  const { ctx, feed } = changeFeedContexts(db);
  const tenant = `model-${seed}`;
  const store = subscriptionStore(db, tenant);
  // A clock that moves a delay per pass, so that every pass is this loop's next one.
  let clock = Date.now();
  const now = () => clock;
  const queued: NotificationMessage[] = [];
  const queue = {
    async notify(message: NotificationMessage) {
      queued.push(message);
      if (queued.length > 1) throw new Error(`seed ${seed}: two notifications waiting at once`);
    },
    async pass() {},
  };

  // A subscription made and activated (its ping answered), as the routes and delivery do.
  const source = { schema: 'dbo', name: 'SUBJECT', kind: 'table' as const, columns: [], primaryKey: [] };
  const state = (await feed.store.state(source))!;
  const id = newSubscriptionId();
  const ping = newEventId();
  await store.create(
    subscriptionRow({
      id,
      owner: 'basic:model',
      createdAt: clock,
      seenFeed: state.feedId,
      seenBatch: state.lastBatch,
      notifiedBatch: state.lastBatch,
      waitingEvent: ping,
      waitingSince: clock,
    }),
    1000,
  );
  await store.delivered(id, ping, true, clock, null);

  // The receiver's copy, from a first sync; afterwards it pulls only when notified.
  const receiver = new SyncClient(ctx, feed, 'SUBJECT', 1 + Math.floor(random() * 50));
  await receiver.untilInSync();

  let passes = 0;
  let notifications = 0;
  /** Steps at which commits happened that no notification made after them covers yet. */
  let uncovered: number[] = [];
  const pass = async (step: number) => {
    clock += DELAY_MS;
    passes++;
    const before = queued.length;
    // Only this loop's subscription counts: others in the database (other runs) are not ours.
    await notifierPass({
      tenant,
      store: { ...store, listLive: async () => (await store.listLive()).filter((s) => s.id === id) },
      feed: feed.store,
      queue,
      recorded: ['SUBJECT'],
      delayMs: DELAY_MS,
      staleWaitingMs: 3_600_000,
      now,
    });
    if (queued.length > before) {
      notifications++;
      // The pass stamped before it notified: every commit before this step is covered by it.
      uncovered = uncovered.filter((s) => s >= step);
    }
  };
  const deliver = async () => {
    const message = queued.shift();
    if (!message) return;
    await receiver.untilInSync();
    await store.delivered(message.subscription, message.eventId, false, clock, null);
  };

  const q = (name: string) => (db.dialect.name === 'mssql' ? `[${name}]` : `"${name}"`);
  const table = `dbo.${q('SUBJECT')}`;
  let nextId = options.firstId;
  const sessions = await Promise.all(Array.from({ length: writers }, (_, i) => options.writer(i)));
  const open: (number | undefined)[] = Array.from({ length: writers }, () => undefined);
  const known: Set<number>[] = Array.from({ length: writers }, () => new Set<number>());
  // Whether the writer's open transaction wrote anything: an empty commit changes nothing to notify.
  const wrote: boolean[] = Array.from({ length: writers }, () => false);
  let commits = 0;
  let rollbacks = 0;
  let outOfOrder = 0;
  let began = 0;
  let step = 0;
  try {
    for (; step < steps; step++) {
      const w = Math.floor(random() * writers);
      const session = sessions[w]!;
      const roll = random();
      if (roll < 0.15) await pass(step);
      else if (roll < 0.3) await deliver();
      else if (open[w] === undefined) {
        await session.begin();
        open[w] = began++;
        wrote[w] = false;
      } else if (roll < 0.8) {
        const mine = [...known[w]!];
        const kind = mine.length === 0 ? 0 : Math.floor(random() * 3);
        wrote[w] = true;
        if (kind === 0) {
          while (nextId % writers !== w) nextId++;
          const rowId = nextId++;
          await session.run(
            `INSERT INTO ${table} (${q('ID')}, ${q('NAZEV')}, ${q('AKTIVNI')}) VALUES (${param(1)}, ${param(2)}, 1)`,
            [rowId, `Oznámený ${rowId} s${seed}`],
          );
          known[w]!.add(rowId);
        } else if (kind === 1) {
          await session.run(
            `UPDATE ${table} SET ${q('NAZEV')} = ${param(1)} WHERE ${q('ID')} = ${param(2)}`,
            [`Změněn s${seed} k${step}`, mine[Math.floor(random() * mine.length)]],
          );
        } else {
          const rowId = mine[Math.floor(random() * mine.length)]!;
          await session.run(`DELETE FROM ${table} WHERE ${q('ID')} = ${param(1)}`, [rowId]);
          known[w]!.delete(rowId);
        }
      } else {
        const commit = random() < 0.8;
        const order = open[w]!;
        if (open.some((other, i) => i !== w && other !== undefined && other < order)) outOfOrder++;
        await session.end(commit);
        open[w] = undefined;
        if (commit) {
          commits++;
          if (wrote[w]) uncovered.push(step);
        } else {
          rollbacks++;
          const rows = [...(await currentRows(ctx, 'SUBJECT')).keys()].map(Number);
          known[w] = new Set(rows.filter((rowId) => rowId >= options.firstId && rowId % writers === w));
        }
      }
    }
  } finally {
    for (const [w, session] of sessions.entries()) {
      if (open[w] !== undefined) {
        await session.end(true);
        commits++;
        if (wrote[w]) uncovered.push(step);
      }
    }
  }
  // The writers are done: passes and deliveries until a pass finds nothing to notify.
  for (let round = 0; ; round++) {
    if (round > 20) throw new Error(`seed ${seed}: notifications never ended`);
    await deliver();
    const before = notifications;
    await pass(++step);
    if (notifications === before && queued.length === 0) break;
  }
  await store.remove(id, 'basic:model');
  if (uncovered.length > 0) {
    throw new Error(
      `seed ${seed}: commits at steps ${uncovered.join(', ')} were never followed by a notification`,
    );
  }
  const truth = await currentRows(ctx, 'SUBJECT');
  const problems: string[] = [];
  for (const [key, record] of truth) {
    const copied = receiver.copy.get(key);
    if (JSON.stringify(copied) !== JSON.stringify(record))
      problems.push(`row ${key}: ${JSON.stringify(copied)}`);
  }
  for (const key of receiver.copy.keys()) if (!truth.has(key)) problems.push(`row ${key} deleted but copied`);
  if (problems.length > 0) {
    throw new Error(
      `seed ${seed}: the receiver's copy differs from getData: ${problems.slice(0, 5).join('; ')}`,
    );
  }
  return { seed, commits, rollbacks, outOfOrder, passes, notifications };
}
