/**
 * The keys' records of CONTRACT 5a over a database connection, shared by the SQL adapters:
 * `SVC_IDEMPOTENCY` (infra/sql/*\/090-idempotency.sql). No SQL text of either dialect lives here;
 * each adapter passes its statements and says how a key is held while its call runs.
 */
import type { Database, Row } from '../../core/database.js';
import type {
  CallKey,
  IdempotencyStore,
  KeyHold,
  KeyRecord,
  RecordedAnswer,
} from '../../core/idempotency.js';

/** A dialect's statements of the keys' records. */
export interface IdempotencyStatements {
  /**
   * Parameter: digest. Columns `fingerprint`, `status`, `contentType`, `headers` (JSON text),
   * `body`, `objectKey`, `journalId` of the key's record, unless it has expired.
   */
  readonly find: string;
  /**
   * In the transaction of the call's effects, while the key is held. Parameters: digest, tenant,
   * fingerprint, status, content type, headers (JSON text), body, object key, journal id,
   * retention hours. Replaces an expired record of the key.
   */
  readonly record: string;
  /** Parameter: digest. */
  readonly forget: string;
  /**
   * How the recorded body goes as `record`'s parameter: as bytes (undefined), or as text its
   * statement decodes (the embedded database, whose prepared statements take text parameters only).
   */
  readonly bodyParameter?: (body: Buffer) => string;
}

/**
 * How a dialect holds a key while its call runs: on SQL Server a lock of the transaction in which
 * the call's effects will commit; on the embedded database (one session, in this process) a mark
 * in the process.
 */
export interface KeyLocking {
  /**
   * Takes the key for a transaction begun for it, without waiting: true when taken. Undefined: the
   * dialect holds keys in the process ({@link heldInProcess}).
   */
  readonly lockInTransaction?: (tx: Pick<Database, 'query'>, digest: string) => Promise<boolean>;
  /** The keys held by calls of this process (the embedded database's way). */
  readonly heldInProcess?: Set<string>;
}

type Connection = Pick<Database, 'query' | 'dialect'>;

const text = (value: unknown) => (value === null || value === undefined ? undefined : String(value));

function toRecord(row: Row): KeyRecord {
  const body = row.body;
  const headers = text(row.headers);
  const answer: RecordedAnswer = {
    status: Number(row.status),
    contentType: text(row.contentType),
    body:
      body === null || body === undefined
        ? undefined
        : Buffer.isBuffer(body)
          ? body
          : Buffer.from(body as Uint8Array),
    objectKey: text(row.objectKey),
    journalId: row.journalId === null || row.journalId === undefined ? undefined : Number(row.journalId),
    headers: headers ? (JSON.parse(headers) as Record<string, string>) : undefined,
  };
  return { fingerprint: String(row.fingerprint).trim(), answer };
}

async function findIn(q: Pick<Database, 'query'>, sql: IdempotencyStatements, digest: string) {
  const row = (await q.query(sql.find, [digest]))[0];
  return row ? toRecord(row) : undefined;
}

async function recordIn(
  q: Pick<Database, 'query'>,
  sql: IdempotencyStatements,
  tenant: string,
  key: CallKey,
  record: KeyRecord,
) {
  const { answer } = record;
  const params = [
    key.digest,
    tenant,
    record.fingerprint,
    answer.status,
    answer.contentType ?? null,
    answer.headers ? JSON.stringify(answer.headers) : null,
    answer.body === undefined ? null : sql.bodyParameter ? sql.bodyParameter(answer.body) : answer.body,
    answer.objectKey ?? null,
    answer.journalId ?? null,
    key.retentionHours,
  ];
  await q.query(sql.record, params);
}

interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** The hold's transaction was asked to roll back (not an error of the call). */
class RolledBack extends Error {
  override readonly name = 'RolledBack';
}

/** The key was held by another call's transaction. */
class NotTaken extends Error {
  override readonly name = 'NotTaken';
}

/**
 * A key held by a transaction begun for it (SQL Server): the lock is the transaction's, so it
 * lasts until the commit of the call's effects, or until a rollback or the session's end gives it
 * back. The transaction is kept open by a callback of `db.transaction` that waits for the end.
 */
async function holdInTransaction(
  db: Database,
  sql: IdempotencyStatements,
  tenant: string,
  key: CallKey,
  lock: (tx: Pick<Database, 'query'>, digest: string) => Promise<boolean>,
): Promise<KeyHold | undefined> {
  const opened = deferred<Connection>();
  const end = deferred<'commit' | 'rollback'>();
  const transaction = db.transaction(async (tx) => {
    if (!(await lock(tx, key.digest))) throw new NotTaken();
    opened.resolve(tx);
    if ((await end.promise) === 'rollback') throw new RolledBack();
  });
  // Settled here, whichever way: its outcome is read through `ended` below.
  const ended = transaction.then(
    () => undefined,
    (error: unknown) => error,
  );
  const tx = await Promise.race([opened.promise, ended.then(() => undefined)]);
  if (!tx) {
    const error = await ended;
    if (error instanceof NotTaken) return undefined;
    throw error;
  }
  let over = false;
  return {
    find: () => findIn(tx, sql, key.digest),
    async commit(effects) {
      if (over) throw new Error('A key hold commits once');
      over = true;
      let value: Awaited<ReturnType<typeof effects>>['value'];
      try {
        const done = await effects(tx);
        value = done.value;
        if (done.record) await recordIn(tx, sql, tenant, key, done.record);
      } catch (error) {
        end.resolve('rollback');
        await ended;
        throw error;
      }
      end.resolve('commit');
      const error = await ended;
      if (error !== undefined) throw error;
      return value;
    },
    async release() {
      if (!over) {
        over = true;
        end.resolve('rollback');
      }
      await ended;
    },
  };
}

/**
 * A key held in this process (the embedded database: one session, in this process, so no other
 * process reaches it); the call's effects commit in a transaction begun by {@link KeyHold.commit}.
 */
function holdInProcess(
  db: Database,
  sql: IdempotencyStatements,
  tenant: string,
  key: CallKey,
  held: Set<string>,
): KeyHold | undefined {
  if (held.has(key.digest)) return undefined;
  held.add(key.digest);
  let released = false;
  return {
    find: () => findIn(db, sql, key.digest),
    commit: (effects) =>
      db.transaction(async (tx) => {
        const done = await effects(tx);
        if (done.record) await recordIn(tx, sql, tenant, key, done.record);
        return done.value;
      }),
    async release() {
      if (released) return;
      released = true;
      held.delete(key.digest);
    },
  };
}

/** A tenant's keys' records on its database, in the statements of its dialect. */
export function createSqlIdempotencyStore(
  db: Database,
  sql: IdempotencyStatements,
  locking: KeyLocking,
  tenant: string,
): IdempotencyStore {
  return {
    find: (digest) => findIn(db, sql, digest),
    async hold(key) {
      if (locking.lockInTransaction)
        return holdInTransaction(db, sql, tenant, key, locking.lockInTransaction);
      return holdInProcess(db, sql, tenant, key, locking.heldInProcess ?? new Set());
    },
    async forget(digest) {
      await db.query(sql.forget, [digest]);
    },
    holdsInProcess: !locking.lockInTransaction,
  };
}
