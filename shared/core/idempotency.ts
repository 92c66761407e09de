import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Exactly once (CONTRACT 5a): a call sent with an `Idempotency-Key` runs once, and its answer is
 * recorded under the key in the same database transaction as the call's effects, so that a retry
 * gets that answer byte for byte instead of running again, whatever failed in between. The key is
 * the tenant's and the caller's; the record is found by a digest of the three (never the key as
 * sent, which a caller may have made of anything), and compared with the request's fingerprint.
 *
 * Which call holds a key while it runs is the database's to say ({@link KeyHold}): on SQL Server a
 * lock the call's transaction owns, given back by its commit, its rollback or its session's end, so
 * that a call killed half-way leaves nothing behind that a retry would have to wait out.
 */

/** The request header (the IETF httpapi draft's name), lower-case as the service's requests carry it. */
export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';

/** The answer header of every answer to a retry that ran nothing. */
export const IDEMPOTENT_REPLAYED_HEADER = 'idempotent-replayed';

/** Hours a key's record is kept when the tenant's registry does not say (`idempotencyRetentionHours`). */
export const DEFAULT_IDEMPOTENCY_RETENTION_HOURS = 24;

const MAX_KEY_LENGTH = 255;
/** Visible ASCII, `!` to `~`. */
const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

/** Why an `Idempotency-Key` header was refused (the route answers 400 with its own code). */
export class InvalidIdempotencyKeyError extends Error {
  override readonly name = 'InvalidIdempotencyKeyError';
}

/** The content of a Structured Fields string (`"…"`; `\"` and `\\` its only escapes). */
function unquoted(value: string): string {
  let key = '';
  for (let i = 1; i < value.length; i++) {
    const c = value[i]!;
    if (c === '"') {
      if (i !== value.length - 1)
        throw new InvalidIdempotencyKeyError('Idempotency-Key has text after its quoted string');
      return key;
    }
    if (c === '\\') {
      const next = value[++i];
      if (next !== '"' && next !== '\\') {
        throw new InvalidIdempotencyKeyError(
          'Idempotency-Key escapes a character other than " or \\ in its quoted string',
        );
      }
      key += next;
    } else key += c;
  }
  throw new InvalidIdempotencyKeyError('Idempotency-Key opens a quoted string that does not close');
}

/**
 * The key of an `Idempotency-Key` header: 1 to 255 visible ASCII characters, sent bare or as the
 * draft's quoted string (a Structured Fields string: `"…"`, with `\"` and `\\` its only escapes; the
 * quotes are not part of the key). Undefined when the header is absent; throws
 * {@link InvalidIdempotencyKeyError} for an empty or malformed one.
 */
export function parseIdempotencyKey(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const value = header.trim();
  let key = value;
  if (value.startsWith('"')) key = unquoted(value);
  if (key.length === 0) throw new InvalidIdempotencyKeyError('Idempotency-Key is empty');
  if (key.length > MAX_KEY_LENGTH) {
    throw new InvalidIdempotencyKeyError(`Idempotency-Key is longer than ${MAX_KEY_LENGTH} characters`);
  }
  if (!VISIBLE_ASCII.test(key)) {
    throw new InvalidIdempotencyKeyError(
      'Idempotency-Key may hold only visible ASCII characters (no spaces, control or non-ASCII characters)',
    );
  }
  return key;
}

/** Whose key it is: another tenant's or another caller's equal key is another key. */
export interface KeyOwner {
  readonly tenant: string;
  /**
   * The caller, by kind and name: `application:<id>` (Web API); on the Data API its identity as a
   * subscription's owner (`callerIdentity`: `basic:<user>`, `client:<client id>`, or
   * `bearer:<issuer> <sub>` of an identity provider's token).
   */
  readonly caller: string;
}

const lengthPrefixed = (hash: ReturnType<typeof createHash>, part: string | Uint8Array) => {
  const bytes = typeof part === 'string' ? Buffer.from(part, 'utf8') : part;
  // Each part's length first: no two different lists of parts hash alike.
  hash.update(`${bytes.length}:`);
  hash.update(bytes);
};

/** The digest a key's record is found by (hex SHA-256 of the owner and the key). */
export function keyDigest(owner: KeyOwner, key: string): string {
  const hash = createHash('sha256');
  for (const part of ['svc-idempotency-key', owner.tenant, owner.caller, key]) lengthPrefixed(hash, part);
  return hash.digest('hex');
}

/**
 * A request's fingerprint (hex SHA-256): its route and the parts of its body that say what it does
 * (CONTRACT 5a: the Web API's envelope bytes, not the signature; `setFile`'s file bytes, name, type
 * and `userDBProcedure`, not the multipart boundary).
 */
export function requestFingerprint(
  route: string,
  parts: readonly (string | Uint8Array | undefined)[],
): string {
  const hash = createHash('sha256');
  lengthPrefixed(hash, route);
  for (const part of parts) {
    // An absent part is not an empty one.
    if (part === undefined) hash.update('-');
    else lengthPrefixed(hash, part);
  }
  return hash.digest('hex');
}

/** The key of one call: found by its digest, its request known by its fingerprint. */
export interface CallKey {
  readonly digest: string;
  readonly fingerprint: string;
  /** Hours its record is kept. */
  readonly retentionHours: number;
}

/** The key of a call with `header`, or undefined without one (throws {@link InvalidIdempotencyKeyError}). */
export function callKey(
  header: string | undefined,
  owner: KeyOwner,
  fingerprint: () => string,
  retentionHours: number,
): CallKey | undefined {
  const key = parseIdempotencyKey(header);
  if (key === undefined) return undefined;
  return { digest: keyDigest(owner, key), fingerprint: fingerprint(), retentionHours };
}

/**
 * A recorded answer, as the first call answered it: replayed byte for byte. An answer that went to
 * object storage (over the inline limit) is kept as its object's key and presigned again on each
 * replay. An asynchronous call's record is its journal id: its retry answers that job.
 */
export interface RecordedAnswer {
  readonly status: number;
  readonly contentType?: string;
  readonly body?: Buffer;
  /** The stored answer's object key (a 303 to it, presigned anew). */
  readonly objectKey?: string;
  /** The Web API journal row of the call. */
  readonly journalId?: number;
  /** Further headers to replay (e.g. `Location` of a created subscription). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** A key's record: the fingerprint of the request that made it, and its answer. */
export interface KeyRecord {
  readonly fingerprint: string;
  readonly answer: RecordedAnswer;
}

/** The same key with another request (422; Web API 107, Data API `idempotency_key_reused`). */
export class IdempotencyKeyReusedError extends Error {
  override readonly name = 'IdempotencyKeyReusedError';
  constructor() {
    super('This Idempotency-Key was used with another request; use a new key for a new request');
  }
}

/** Seconds a retry is told to wait while the key's first call still runs. */
export const IN_PROGRESS_RETRY_AFTER_SECONDS = 1;

/** The same key while its first call still runs (409 with `Retry-After`; Web API 108, Data API `idempotency_key_in_progress`). */
export class IdempotencyKeyInProgressError extends Error {
  override readonly name = 'IdempotencyKeyInProgressError';
  readonly retryAfterSeconds = IN_PROGRESS_RETRY_AFTER_SECONDS;
  constructor() {
    super('The first call with this Idempotency-Key is still running; ask again shortly for its answer');
  }
}

const sameFingerprint = (a: string, b: string) =>
  a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** The record's answer when it was made by the same request; 422 when by another. */
export function replayOf(record: KeyRecord, key: CallKey): RecordedAnswer {
  if (!sameFingerprint(record.fingerprint, key.fingerprint)) throw new IdempotencyKeyReusedError();
  return record.answer;
}

/** A transaction of the tenant's database, as the stores of its adapters take it (opaque to the core). */
export type Transaction = object;

/**
 * A key held by one call until {@link release}: no other call holds it meanwhile (a retry is told
 * 409, or, on a database that serialises its sessions, waits). What the call records under the key
 * commits in {@link commit}'s transaction, together with the call's effects.
 */
export interface KeyHold {
  /** The key's record, read while held: a call that held it before may have recorded it meanwhile. */
  find(): Promise<KeyRecord | undefined>;
  /**
   * Runs `effects` in one transaction and, when they give an answer to record, writes it under the
   * key in that transaction before it commits. A throw rolls the effects and the record back.
   * Once per hold.
   */
  commit<T>(effects: (tx: Transaction) => Promise<{ value: T; record?: KeyRecord }>): Promise<T>;
  /** Gives the key back (and rolls back what did not commit). Always called, once. */
  release(): Promise<void>;
}

/** Port: the keys' records of a tenant's database (the service's own table; never a Data API source). */
export interface IdempotencyStore {
  /** The unexpired record of a key. */
  find(digest: string): Promise<KeyRecord | undefined>;
  /** Holds the key for this call; undefined while another call holds it. */
  hold(key: CallKey): Promise<KeyHold | undefined>;
  /** Removes a key's record whose call turned out to run nothing (an async job that could not be queued). */
  forget(digest: string): Promise<void>;
  /**
   * Holding a key costs no round trip to the database (a mark in the process): the record is
   * then read once, under the hold, rather than before it as well.
   */
  readonly holdsInProcess?: boolean;
}

/** What {@link onceUnderKey} came to: the call ran (its value), or a record was found and nothing ran. */
export type KeyedOutcome<T> =
  | { readonly ran: true; readonly value: T }
  | { readonly ran: false; readonly replay: RecordedAnswer };

/**
 * A call under its key: a record of the same request is replayed (nothing runs), of another is
 * 422; a key another call holds is 409 (its answer comes once it commits); else `run` runs while
 * the key is held, and records its answer through the hold's {@link KeyHold.commit}. Without a
 * key, `run` runs with no hold.
 */
export async function onceUnderKey<T>(
  store: IdempotencyStore,
  key: CallKey | undefined,
  run: (hold: KeyHold | undefined) => Promise<T>,
): Promise<KeyedOutcome<T>> {
  if (!key) return { ran: true, value: await run(undefined) };
  // Most retries find the record at once, without holding anything (where a hold costs a round
  // trip and a transaction).
  if (!store.holdsInProcess) {
    const recorded = await store.find(key.digest);
    if (recorded) return { ran: false, replay: replayOf(recorded, key) };
  }
  const hold = await store.hold(key);
  if (!hold) throw new IdempotencyKeyInProgressError();
  try {
    const meanwhile = await hold.find();
    if (meanwhile) return { ran: false, replay: replayOf(meanwhile, key) };
    return { ran: true, value: await run(hold) };
  } finally {
    await hold.release();
  }
}
