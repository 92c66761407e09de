/**
 * The change feed's model test (CONTRACT 4b), for either database: writers insert, update and
 * delete rows of SUBJECT in transactions that commit or roll back, in an order of their own (on the
 * T-SQL engine each writer is a session of its own and holds its transaction open across sync
 * calls; on the embedded database, which serves one session, a transaction's writes are made when
 * it ends, so it too becomes visible in another order than it began), while a client follows the
 * links of `getChanges` from its first call on and applies every page to its copy. After the
 * writers end and one last sync, the copy must equal what `getData` answers. Every step is drawn
 * from a seeded random source, so a failing seed replays exactly.
 */
import { createEmbeddedDataSourceReader } from '../../shared/adapters/embedded/data-source-reader.js';
import { createMssqlDataSourceReader } from '../../shared/adapters/mssql/data-source-reader.js';
import { type ChangeFeedContext, getChanges } from '../../shared/core/data-api/changes.js';
import { rememberedCatalogue } from '../../shared/core/data-api/data-source.js';
import { type DataApiContext, getData } from '../../shared/core/data-api/read.js';
import type { Database } from '../../shared/core/database.js';
import { changeFeedStore } from '../../shared/lambda/change-feed.js';

export const SUBJECT_HIDDEN = { SUBJECT: ['SECRET_WEBHOOK'] };

/** The Data API's context and the change feed's on `db`, as the demo tenant has them. */
export function changeFeedContexts(
  database: Database,
  options: { now?: () => number; retentionDays?: number; tenant?: string } = {},
): { ctx: DataApiContext; feed: ChangeFeedContext } {
  const key = Buffer.alloc(32, 7);
  // Catalogue lookups remembered, as every function does (shared/config/databases.ts).
  const catalogue = rememberedCatalogue(database, 60_000);
  const db: Database = {
    ...database,
    findDataSource: (schema, name) => catalogue.findDataSource(schema, name),
    forgetDataSource: (schema, name) => catalogue.forgetDataSource?.(schema, name) ?? false,
  };
  const ctx: DataApiContext = {
    tenant: 'demo',
    reader:
      db.dialect.name === 'mssql' ? createMssqlDataSourceReader(db) : createEmbeddedDataSourceReader(db),
    allowed: '*',
    hidden: SUBJECT_HIDDEN,
    cursors: { keys: [key], tenant: options.tenant ?? 'demo' },
    limits: {
      inlineLimitBytes: 64 * 1024 * 1024,
      presignSeconds: 60,
      store: undefined,
      keyPrefix: 'changes',
    },
    batchRows: 1000,
  };
  const feed: ChangeFeedContext = {
    store: changeFeedStore(db),
    recorded: ['SUBJECT', 'DOKUMENT'],
    retentionDays: options.retentionDays ?? 7,
    tokens: { keys: [key], tenant: options.tenant ?? 'demo' },
    now: options.now,
  };
  return { ctx, feed };
}

export type SyncRecord = Record<string, unknown>;

/** One answer of getChanges: its records and its link. */
export async function changesPage(
  ctx: DataApiContext,
  feed: ChangeFeedContext,
  source: string,
  request: { token?: string; rows?: string; columns?: string },
): Promise<{ records: SyncRecord[]; rel: 'next' | 'sync'; token: string }> {
  const { answer, link } = await getChanges(ctx, feed, source, request);
  if (answer.kind !== 'inline') throw new Error('unexpected redirect');
  const body = JSON.parse(Buffer.from(answer.body).toString('utf8')) as Record<string, SyncRecord[]>;
  return { records: body[source]!, rel: link.rel, token: link.token };
}

/** A sync client: a copy by key, kept by applying every page in order. */
export class SyncClient {
  readonly copy = new Map<string, SyncRecord>();
  private token: string | undefined;
  calls = 0;
  tombstones = 0;
  constructor(
    private readonly ctx: DataApiContext,
    private readonly feed: ChangeFeedContext,
    private readonly source: string,
    private readonly rows: number,
    private readonly key = 'ID',
  ) {}

  /** One call: the next page (or the next sync); whether the answer said "in sync" (rel=sync). */
  async step(): Promise<boolean> {
    const page = await changesPage(this.ctx, this.feed, this.source, {
      token: this.token,
      rows: String(this.rows),
    });
    this.calls++;
    for (const record of page.records) {
      const id = String(record[this.key]);
      if ('@removed' in record) {
        this.tombstones++;
        this.copy.delete(id);
      } else this.copy.set(id, record);
    }
    this.token = page.token;
    return page.rel === 'sync';
  }

  /** Calls until an answer says "in sync". */
  async untilInSync(): Promise<void> {
    for (let i = 0; i < 100_000; i++) if (await this.step()) return;
    throw new Error('never in sync');
  }
}

/** What getData answers for the source, by key: the truth the copy must equal. */
export async function currentRows(
  ctx: DataApiContext,
  source: string,
  key = 'ID',
): Promise<Map<string, SyncRecord>> {
  const answer = await getData(ctx, source);
  if (answer.kind !== 'inline') throw new Error('unexpected redirect');
  const body = JSON.parse(Buffer.from(answer.body).toString('utf8')) as Record<string, SyncRecord[]>;
  return new Map(body[source]!.map((record) => [String(record[key]), record]));
}

/** mulberry32: a small seeded random source. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A writer's session: statements in a transaction it opened, ended by commit or rollback. */
export interface WriterSession {
  begin(): Promise<void>;
  run(sql: string, params: readonly unknown[]): Promise<void>;
  end(commit: boolean): Promise<void>;
}

/** Per writer: a session of its own (T-SQL), or one that makes its writes when it ends (embedded). */
export type WriterFactory = (index: number) => Promise<WriterSession>;

/** A writer on a one-session database: its statements run in one transaction when it ends. */
export function deferredWriter(db: Database): WriterSession {
  let pending: { sql: string; params: readonly unknown[] }[] = [];
  return {
    async begin() {
      pending = [];
    },
    async run(sql, params) {
      pending.push({ sql, params });
    },
    async end(commit) {
      const statements = pending;
      pending = [];
      if (statements.length === 0) return;
      await db
        .transaction(async (tx) => {
          for (const statement of statements) await tx.query(statement.sql, statement.params);
          if (!commit) throw new RolledBack();
        })
        .catch((error: unknown) => {
          if (!(error instanceof RolledBack) && !((error as Error).cause instanceof RolledBack)) throw error;
        });
    },
  };
}
class RolledBack extends Error {}

export interface ModelRun {
  readonly seed: number;
  readonly steps: number;
  readonly writers: number;
  readonly commits: number;
  readonly rollbacks: number;
  readonly outOfOrder: number;
  readonly calls: number;
  readonly tombstones: number;
}

/**
 * One seeded run: `writers` writers, each on the keys it inserted with `id % writers === its
 * index` (so that no writer waits for another's row lock), and one client that syncs SUBJECT from
 * scratch.
 * Throws when the copy differs from getData at the end.
 */
export async function runChangeFeedModel(options: {
  db: Database;
  writer: WriterFactory;
  seed: number;
  steps: number;
  writers: number;
  /** The first id this run inserts; runs on one database use separate ranges. */
  firstId: number;
  param: (index: number) => string;
}): Promise<ModelRun> {
  const { db, seed, steps, writers, param } = options;
  const random = seededRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const { ctx, feed } = changeFeedContexts(db);
  const client = new SyncClient(ctx, feed, 'SUBJECT', 1 + Math.floor(random() * 15));
  const q = (name: string) => (db.dialect.name === 'mssql' ? `[${name}]` : `"${name}"`);
  const table = `dbo.${q('SUBJECT')}`;
  let nextId = options.firstId;
  const sessions = await Promise.all(Array.from({ length: writers }, (_, i) => options.writer(i)));
  const open: (number | undefined)[] = Array.from({ length: writers }, () => undefined);
  // Each writer changes only rows this run inserted: the demo's rows stay as they are for the
  // suites that share the database (the T-SQL integration suites run on one).
  const ours = (id: number, w: number) => id >= options.firstId && id % writers === w;
  const known: Set<number>[] = Array.from({ length: writers }, () => new Set<number>());
  let commits = 0;
  let rollbacks = 0;
  let outOfOrder = 0;
  let began = 0;
  try {
    for (let step = 0; step < steps; step++) {
      const w = Math.floor(random() * writers);
      const session = sessions[w]!;
      const roll = random();
      if (roll < 0.3) {
        await client.step();
      } else if (open[w] === undefined) {
        await session.begin();
        open[w] = began++;
      } else if (roll < 0.82) {
        // One write in the open transaction, on this writer's keys.
        const mine = [...known[w]!];
        const kind = mine.length === 0 ? 0 : Math.floor(random() * 3);
        if (kind === 0) {
          while (nextId % writers !== w) nextId++;
          const id = nextId++;
          await session.run(
            `INSERT INTO ${table} (${q('ID')}, ${q('NAZEV')}, ${q('MESTO')}, ${q('SECRET_WEBHOOK')}, ${q('AKTIVNI')}) VALUES (${param(1)}, ${param(2)}, ${param(3)}, ${param(4)}, 1)`,
            [id, `Nový ${id} s${seed}`, random() < 0.3 ? null : pick(['Praha', 'Brno', 'Ostrava']), 'hidden'],
          );
          known[w]!.add(id);
        } else if (kind === 1) {
          const id = pick(mine);
          await session.run(
            `UPDATE ${table} SET ${q('NAZEV')} = ${param(1)}, ${q('MESTO')} = ${param(2)} WHERE ${q('ID')} = ${param(3)}`,
            [`Změněn s${seed} k${step}`, random() < 0.3 ? null : pick(['Plzeň', 'Zlín']), id],
          );
        } else {
          const id = pick(mine);
          await session.run(`DELETE FROM ${table} WHERE ${q('ID')} = ${param(1)}`, [id]);
          known[w]!.delete(id);
        }
      } else {
        // End it: mostly commit. One that began before another still open commits out of order.
        const commit = random() < 0.8;
        const order = open[w]!;
        if (open.some((other, i) => i !== w && other !== undefined && other < order)) outOfOrder++;
        await session.end(commit);
        open[w] = undefined;
        if (commit) commits++;
        else {
          rollbacks++;
          // What this writer knows of its keys is the database's again.
          const now = [...(await currentRows(ctx, 'SUBJECT')).keys()].map(Number);
          known[w] = new Set(now.filter((id) => ours(id, w)));
        }
      }
    }
  } finally {
    for (const [w, session] of sessions.entries()) {
      if (open[w] !== undefined) {
        await session.end(true);
        commits++;
      }
    }
  }
  await client.untilInSync();
  // Once more: the last sync token must answer nothing new, and the copy must be the table.
  await client.untilInSync();
  const truth = await currentRows(ctx, 'SUBJECT');
  const problems: string[] = [];
  for (const [id, record] of truth) {
    const copied = client.copy.get(id);
    if (!copied) problems.push(`row ${id} missing from the copy`);
    else if (JSON.stringify(copied) !== JSON.stringify(record)) {
      problems.push(`row ${id} differs: ${JSON.stringify(copied)} vs ${JSON.stringify(record)}`);
    }
  }
  for (const id of client.copy.keys())
    if (!truth.has(id)) problems.push(`row ${id} deleted but still in the copy`);
  if (problems.length > 0) {
    throw new Error(`seed ${seed}: the copy differs from getData: ${problems.slice(0, 5).join('; ')}`);
  }
  return {
    seed,
    steps,
    writers,
    commits,
    rollbacks,
    outOfOrder,
    calls: client.calls,
    tombstones: client.tombstones,
  };
}

/** What getChanges answered: `answered`, or the refusal as `status code`. */
async function outcomeOf(run: () => Promise<unknown>): Promise<{ outcome: string; message?: string }> {
  try {
    await run();
    return { outcome: 'answered' };
  } catch (error) {
    const refusal = error as { status?: number; code?: string; message: string };
    if (refusal.status === undefined) throw error;
    return { outcome: `${refusal.status} ${refusal.code}`, message: refusal.message };
  }
}

/** What {@link restoredFeedCase} saw. */
export interface RestoredFeedCase {
  /** Per token taken after the backup (the last `sync`, a `next` of changes, a `next` of a first sync): its answer. */
  readonly after: Record<'sync' | 'changesNext' | 'initialNext', { outcome: string; message?: string }>;
  /** The ids the `sync` token taken at the backup answered after the restore. */
  readonly atBackup: readonly unknown[];
  /** Whether a new sync from scratch, after the restore, gives a copy equal to getData. */
  readonly freshCopyEqual: boolean;
}

/**
 * A database put back behind its clients' sync tokens, as a restore from a backup (or a reset)
 * does, on either dialect: SUBJECT's feed row and change rows back to what they were at the
 * "backup" (its FEED_ID kept: the same recording), the rows written since gone; then a new
 * write. Tokens of batches the feed no longer has must be refused (410), not read as
 * an empty range that moves the client back and so misses that write; a token of the backup's own
 * batch still reads on. Writes only rows from `firstId` (the demo's rows stay as they are).
 */
export async function restoredFeedCase(db: Database, firstId: number): Promise<RestoredFeedCase> {
  const { ctx, feed } = changeFeedContexts(db);
  const q = (name: string) => `"${name}"`;
  const subject = `dbo.${q('SUBJECT')}`;
  const p = (index: number) => db.dialect.param(index);
  const insert = (id: number) =>
    db.query(`INSERT INTO ${subject} (${q('ID')}, ${q('NAZEV')}) VALUES (${p(1)}, ${p(2)})`, [
      id,
      `Obnova ${id}`,
    ]);
  const syncFrom = async (token: string | undefined) => {
    let page = await changesPage(ctx, feed, 'SUBJECT', { token, rows: '1000' });
    while (page.rel === 'next')
      page = await changesPage(ctx, feed, 'SUBJECT', { token: page.token, rows: '1000' });
    return page;
  };
  const lastBatch = async () =>
    Number(
      (
        await db.query(
          `SELECT ${q('LAST_BATCH')} AS ${q('lastBatch')} FROM dbo.${q('SVC_CHANGE_FEED')} WHERE ${q('SOURCE_SCHEMA')} = ${p(1)} AND ${q('SOURCE_NAME')} = ${p(2)}`,
          ['dbo', 'SUBJECT'],
        )
      )[0]!.lastBatch,
    );

  // The backup: a client in sync, and the feed's last batch.
  const atBackup = (await syncFrom(undefined)).token;
  const backup = await lastBatch();
  // After it: three writes, each read on by the client (a batch each), then two more in one batch,
  // read a page of one; and a first sync started then, a page of ten.
  let sync = atBackup;
  for (const id of [firstId, firstId + 1, firstId + 2]) {
    await insert(id);
    sync = (await changesPage(ctx, feed, 'SUBJECT', { token: sync, rows: '1000' })).token;
  }
  await insert(firstId + 3);
  await insert(firstId + 4);
  const changesNext = await changesPage(ctx, feed, 'SUBJECT', { token: sync, rows: '1' });
  if (changesNext.rel !== 'next') throw new Error('expected a next page of changes');
  const initialNext = await changesPage(ctx, feed, 'SUBJECT', { rows: '10' });
  if (initialNext.rel !== 'next') throw new Error('expected a next page of the first sync');
  if ((await lastBatch()) <= backup + 3) throw new Error('expected batches after the backup');

  // The restore: the rows written since are gone, and so are their change rows and batches.
  await db.query(`DELETE FROM ${subject} WHERE ${q('ID')} >= ${p(1)} AND ${q('ID')} <= ${p(2)}`, [
    firstId,
    firstId + 4,
  ]);
  await db.query(
    `DELETE FROM dbo.${q('SVC_CHANGES_SUBJECT')} WHERE ${q('BATCH')} > ${p(1)} OR ${q('BATCH')} IS NULL`,
    [backup],
  );
  await db.query(
    `UPDATE dbo.${q('SVC_CHANGE_FEED')} SET ${q('LAST_BATCH')} = ${p(1)} WHERE ${q('SOURCE_SCHEMA')} = ${p(2)} AND ${q('SOURCE_NAME')} = ${p(3)}`,
    [backup, 'dbo', 'SUBJECT'],
  );
  // A write after the restore: the next stamp numbers it backup + 1, a batch the tokens had read.
  await insert(firstId + 7);

  const after = {
    sync: await outcomeOf(() => getChanges(ctx, feed, 'SUBJECT', { token: sync })),
    changesNext: await outcomeOf(() =>
      getChanges(ctx, feed, 'SUBJECT', { token: changesNext.token, rows: '1' }),
    ),
    initialNext: await outcomeOf(() =>
      getChanges(ctx, feed, 'SUBJECT', { token: initialNext.token, rows: '10' }),
    ),
  };
  const fromBackup = await changesPage(ctx, feed, 'SUBJECT', { token: atBackup, rows: '1000' });
  const fresh = new SyncClient(ctx, feed, 'SUBJECT', 1000);
  await fresh.untilInSync();
  const truth = await currentRows(ctx, 'SUBJECT');
  await db.query(`DELETE FROM ${subject} WHERE ${q('ID')} = ${p(1)}`, [firstId + 7]);
  return {
    after,
    atBackup: fromBackup.records.map((record) => record.ID),
    freshCopyEqual: JSON.stringify([...fresh.copy]) === JSON.stringify([...truth]),
  };
}
