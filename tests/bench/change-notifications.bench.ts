import type { LocalDatabaseKind } from '../../infra/local/demo-database.js';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { tsqlAvailable } from '../../infra/local/tsql-engine.js';
import { getChanges } from '../../shared/core/data-api/changes.js';
import type { Database } from '../../shared/core/database.js';
import { notifierPass } from '../../shared/core/notifications/notifier.js';
import { newEventId, newSubscriptionId } from '../../shared/core/notifications/subscriptions.js';
import { subscriptionStore } from '../../shared/lambda/notifications.js';
import { changeFeedContexts } from '../support/change-feed-model.js';
import { subscriptionRow } from '../support/subscriptions.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';
import { report } from './measure.js';

const AUTH = `Basic ${Buffer.from('demo:demo-password').toString('base64')}`;
const TABLES = 100;
const RUNS = 30;
const LATENCY_SAMPLES = 20;

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/** 100 recorded tables with an active subscription each, on the stack's database. */
async function subscribedTables(db: Database, tsql: boolean): Promise<string[]> {
  const q = (name: string) => (tsql ? `[${name}]` : `"${name}"`);
  const names = Array.from({ length: TABLES }, (_, i) => `BENCH_NOTIFY_${i}`);
  const store = subscriptionStore(db, 'bench');
  const { feed } = changeFeedContexts(db);
  for (const name of names) {
    await db.query(
      `CREATE TABLE dbo.${q(name)} (${q('ID')} int NOT NULL PRIMARY KEY, ${q('V')} int NOT NULL)`,
    );
    await db.query(`INSERT INTO dbo.${q(name)} (${q('ID')}, ${q('V')}) VALUES (1, 0)`);
    await db.query(
      tsql
        ? `EXEC dbo.SVC_CHANGE_FEED_ENABLE N'dbo', N'${name}'`
        : `SELECT dbo.svc_change_feed_enable('dbo', '${name}')`,
    );
    const state = (await feed.store.stamp({
      schema: 'dbo',
      name,
      kind: 'table',
      columns: [],
      primaryKey: [],
    }))!;
    const id = newSubscriptionId();
    const ping = newEventId();
    await store.create(
      subscriptionRow({
        id,
        owner: 'basic:bench',
        source: { schema: 'dbo', name },
        seenFeed: state.feedId,
        seenBatch: state.lastBatch,
        notifiedBatch: state.lastBatch,
        waitingEvent: ping,
      }),
      10_000,
    );
    await store.delivered(id, ping, true, Date.now(), null);
  }
  return names;
}

/**
 * CONTRACT 4c's costs on one stack's database: a notifier pass over 100 subscribed tables with no
 * changes, and with one changed, each against one `getChanges` call answering 10 changes
 * (alternating, the same run).
 */
async function passCost(stack: LocalStack, label: string, id: string) {
  const db = stack.database;
  const tsql = db.dialect.name === 'mssql';
  const q = (name: string) => (tsql ? `[${name}]` : `"${name}"`);
  const names = await subscribedTables(db, tsql);
  const store = subscriptionStore(db, 'bench');
  const { ctx, feed } = changeFeedContexts(db);
  const queued: { subscription: string; eventId: string }[] = [];
  let clock = Date.now();
  const pass = () =>
    notifierPass({
      tenant: 'bench',
      store,
      feed: feed.store,
      queue: { notify: async (message) => void queued.push(message), pass: async () => undefined },
      recorded: names,
      delayMs: 10_000,
      staleWaitingMs: 3_600_000,
      now: () => (clock += 10_000),
    });
  // A sync token of SUBJECT now.
  let page = await getChanges(ctx, feed, 'SUBJECT', { rows: '1000' });
  while (page.link.rel === 'next')
    page = await getChanges(ctx, feed, 'SUBJECT', { token: page.link.token, rows: '1000' });
  let token = page.link.token;
  const idle: number[] = [];
  const oneChanged: number[] = [];
  const sync: number[] = [];
  for (let i = 0; i < RUNS + 3; i++) {
    const quiet = await timed(pass);
    await db.query(`UPDATE dbo.${q(names[i % TABLES]!)} SET ${q('V')} = ${i + 1} WHERE ${q('ID')} = 1`);
    const changed = await timed(pass);
    if (queued.length !== 1) throw new Error(`a pass after one change queued ${queued.length} events`);
    const event = queued.shift()!;
    await store.delivered(event.subscription, event.eventId, false, clock, null);
    await db.query(
      `UPDATE dbo.${q('SUBJECT')} SET ${q('TELEFON')} = '+420 700 ${i}' WHERE ${q('ID')} BETWEEN 1 AND 10`,
    );
    const pull = await timed(async () => {
      page = await getChanges(ctx, feed, 'SUBJECT', { token });
      token = page.link.token;
    });
    if (i >= 3) {
      idle.push(quiet);
      oneChanged.push(changed);
      sync.push(pull);
    }
  }
  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
  report(
    `notifier pass over ${TABLES} subscribed tables, nothing changed [${label}]`,
    sorted(idle),
    `getChanges answering 10 changes [${label}]`,
    sorted(sync),
    {
      id: `changeNotifications.idlePass.${id}`,
      note: 'per table one stamp (an index seek that finds nothing); per tenant the heartbeat and the list of subscriptions',
    },
  );
  report(
    `notifier pass over ${TABLES} subscribed tables, one changed [${label}]`,
    sorted(oneChanged),
    `getChanges answering 10 changes [${label}]`,
    sorted(sync),
    { id: `changeNotifications.onePass.${id}`, note: 'plus the stamp, the observation and one claim' },
  );
}

/** Commit to delivery through the local stack, the demo tenant's delay being 2 s. */
async function latency() {
  const receiver = await startWebhookReceiver();
  const stack = await startLocalStack({ port: 0, database: 'embedded' });
  try {
    const created = await fetch(`${stack.url}/demo/JsonAPI/Subscriptions`, {
      method: 'POST',
      headers: { authorization: AUTH, 'content-type': 'application/json' },
      body: JSON.stringify({ source: 'SUBJECT', url: `${receiver.url}/bench` }),
    });
    const { id } = (await created.json()) as { id: string };
    for (;;) {
      const status = (await (
        await fetch(`${stack.url}/demo/JsonAPI/Subscriptions/${id}`, { headers: { authorization: AUTH } })
      ).json()) as { state: string };
      if (status.state === 'active') break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const changed = () =>
      receiver.receivedOn('/bench').filter((r) => r.body.includes('table.changed')).length;
    const samples: number[] = [];
    await new Promise((resolve) => setTimeout(resolve, 3000));
    for (let i = 0; i < LATENCY_SAMPLES; i++) {
      const before = changed();
      await fetch(`${stack.url}/_local/erp/writes`, {
        method: 'POST',
        body: JSON.stringify({
          writes: [{ table: 'SUBJECT', op: 'update', key: { ID: 3 }, set: { TELEFON: `+420 701 ${i}` } }],
        }),
      });
      const committed = performance.now();
      await receiver.waitFor('/bench', receiver.received.length + 1, 20_000).catch(() => undefined);
      while (changed() <= before) await new Promise((resolve) => setTimeout(resolve, 10));
      const arrived = receiver
        .receivedOn('/bench')
        .filter((r) => r.body.includes('table.changed'))
        .at(-1)!.at;
      samples.push(arrived - committed);
      // Spread over the pass cycle: a write lands anywhere in it.
      await new Promise((resolve) => setTimeout(resolve, 300 + Math.floor(Math.random() * 1700)));
    }
    report(
      'commit to delivery of table.changed, local stack, delay 2 s [embedded]',
      samples.sort((a, b) => a - b),
      'the configured delay (2 s)',
      samples.map(() => 2000),
      {
        id: 'changeNotifications.latency.embedded',
        goal: 1,
        note: 'median within the delay; p95 within the delay plus delivery',
      },
    );
  } finally {
    await stack.stop();
    await receiver.close();
  }
}

export default async function changeNotificationsBench(): Promise<void> {
  const embedded = await startLocalStack({ port: 0, database: 'embedded' });
  try {
    await passCost(embedded, 'embedded', 'embedded');
  } finally {
    await embedded.stop();
  }
  if (await tsqlAvailable()) {
    const tsql = await startLocalStack({ port: 0, database: 'tsql' as LocalDatabaseKind });
    try {
      await passCost(tsql, 'T-SQL engine', 'tsql');
    } finally {
      await tsql.stop();
    }
  }
  await latency();
}
