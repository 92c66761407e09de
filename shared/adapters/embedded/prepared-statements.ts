import { type PGlite, parse, protocol, type Results } from '@electric-sql/pglite';

type QueryOptions = NonNullable<Parameters<PGlite['query']>[2]>;
type Parameter = string | number | bigint | boolean | null | undefined;

/** Statements kept prepared per database; the least recently used beyond it are closed. */
const PREPARED_LIMIT = 256;
/**
 * Texts seen once, remembered so that a second sighting prepares them; forgotten all at once when
 * full. Bounded like the cache: a text can be tens of KB (a long condition).
 */
const SEEN_LIMIT = 256;
/**
 * Refusals of a statement prepared earlier that a fresh parse cures: "cached plan must not change
 * result type" (a prepared `SELECT *` met a changed row type) and a statement no longer there
 * (someone ran `DEALLOCATE ALL`). Both come before anything runs.
 */
function isStaleStatement(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (code === '26000') return true;
  return code === '0A000' && typeof message === 'string' && message.startsWith('cached plan must not change');
}

const { serialize } = protocol;

function concat(parts: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const part of parts) length += part.length;
  const message = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    message.set(part, offset);
    offset += part.length;
  }
  return message;
}

/** Parameters PGlite would send as their own text whatever the statement's types: only these take the fast path. */
function isPlain(params: readonly unknown[]): params is readonly Parameter[] {
  for (const value of params) {
    const type = typeof value;
    if (
      value !== null &&
      type !== 'undefined' &&
      type !== 'string' &&
      type !== 'number' &&
      type !== 'bigint' &&
      type !== 'boolean'
    ) {
      return false;
    }
  }
  return true;
}

const asText = (value: Parameter): string | null =>
  value === null || value === undefined ? null : String(value);

/**
 * Runs statements on PGlite the way a PostgreSQL driver with a statement cache does: one call into
 * the engine per statement, and a text run more than once is parsed and planned once.
 *
 * Why not `PGlite.query`: it makes six calls into the engine per statement (parse, describe the
 * parameters, bind, describe the result, execute, sync) and parses and plans every time. That fixed
 * cost (0.2–0.5 ms) was most of a signed Web API call's three statements. Here the messages are
 * built with PGlite's own protocol serializer, sent in one `execProtocolStream`, and the answer is
 * read with its own `parseResults`, under the same two locks `query` takes.
 *
 * Parameters go as text, as `query` sends them; only strings, numbers, bigints, booleans and nulls
 * take this path, whose text is the same whatever the parameter's type. Anything else (bytes, dates,
 * objects) goes through `query`, which serializes by the type it asks the engine for.
 *
 * A statement is prepared on its second run, so texts that never repeat (a cursor's name) do not
 * crowd the cache. PostgreSQL re-plans a prepared statement when what it reads changes; when a
 * `SELECT *` would then change its columns it refuses (0A000), and the statement is prepared anew
 * and run once more, which is safe because the refusal comes before anything runs. The same holds
 * for a statement deallocated behind the cache's back (26000).
 */
export function preparedStatements(pg: PGlite): PreparedStatements {
  // Statement names live in the engine's session, so every wrapper of one instance shares one cache.
  let statements = byInstance.get(pg);
  if (!statements) {
    statements = createPreparedStatements(pg);
    byInstance.set(pg, statements);
  }
  return statements;
}

export interface PreparedStatements {
  run(sql: string, params: readonly unknown[], options?: QueryOptions): Promise<Results>;
  /**
   * The same inside `tx`, a transaction of `PGlite.transaction`: the transaction already holds the
   * instance for itself, so only the statement's own lock is taken, and nothing is written to the
   * file system before the transaction's end (as its own `query` does). Prepared statements are the
   * session's, not the transaction's: one prepared here stays when the transaction rolls back.
   */
  runIn(tx: Transaction, sql: string, params: readonly unknown[], options?: QueryOptions): Promise<Results>;
}

/**
 * A statement prepared earlier no longer fits (see {@link isStaleStatement}) and has aborted the
 * transaction it was run in: refused before anything ran, and every statement of the cache is to
 * be parsed afresh, so the transaction can be run again from its start.
 */
export class StalePreparedStatement extends Error {
  override readonly name = 'StalePreparedStatement';
  constructor(override readonly cause: unknown) {
    super('A prepared statement no longer fits what it reads; the transaction is to be run again', { cause });
  }
}

/** What `runIn` needs of a transaction of `PGlite.transaction`. */
export type Transaction = Pick<Parameters<Parameters<PGlite['transaction']>[0]>[0], 'query' | 'closed'>;

const byInstance = new WeakMap<PGlite, PreparedStatements>();

function createPreparedStatements(pg: PGlite): PreparedStatements {
  const prepared = new Map<string, string>();
  const seen = new Set<string>();
  const toClose: string[] = [];
  let sequence = 0;

  function remember(sql: string, name: string) {
    prepared.set(sql, name);
    if (prepared.size > PREPARED_LIMIT) {
      const [oldest, oldName] = prepared.entries().next().value as [string, string];
      prepared.delete(oldest);
      toClose.push(oldName);
    }
  }

  /** The statement's name if it is (or is now to be) prepared, with whether it must be parsed. */
  function statementFor(sql: string): { name: string; parse: boolean } {
    const name = prepared.get(sql);
    if (name !== undefined) {
      // Most recently used last.
      prepared.delete(sql);
      prepared.set(sql, name);
      return { name, parse: false };
    }
    if (seen.has(sql)) {
      seen.delete(sql);
      return { name: `svc_s${++sequence}`, parse: true };
    }
    if (seen.size >= SEEN_LIMIT) seen.clear();
    seen.add(sql);
    return { name: '', parse: true };
  }

  // `parseResults` copies every parser of the instance (hundreds) when a call brings its own; the
  // copy is made once per set of parsers instead.
  const merged = new WeakMap<object, typeof pg.parsers>();
  function withParsers(parsers: QueryOptions['parsers']): typeof pg.parsers {
    if (!parsers) return pg.parsers;
    let all = merged.get(parsers);
    if (!all) {
      all = { ...pg.parsers, ...parsers };
      merged.set(parsers, all);
    }
    return all;
  }

  async function send(sql: string, params: readonly Parameter[], options: QueryOptions): Promise<Results> {
    const statement = statementFor(sql);
    const parts: Uint8Array[] = toClose.splice(0).map((name) => serialize.close({ type: 'S', name }));
    if (statement.parse) parts.push(serialize.parse({ name: statement.name, text: sql }));
    parts.push(
      serialize.bind({ statement: statement.name, values: params.map(asText) }),
      serialize.describe({ type: 'P' }),
      serialize.execute({}),
      serialize.sync(),
    );
    try {
      const messages = await pg.execProtocolStream(concat(parts), {
        syncToFs: false,
        onNotice: options.onNotice,
      });
      if (statement.parse && statement.name !== '') remember(sql, statement.name);
      const { parsers, ...rest } = options;
      return parse.parseResults(messages, withParsers(parsers), rest)[0] ?? { rows: [], fields: [] };
    } catch (error) {
      if (statement.name !== '') {
        // Parsed now but failed later, or prepared earlier and no longer usable: either way it goes.
        if (prepared.get(sql) === statement.name) prepared.delete(sql);
        toClose.push(statement.name);
      }
      throw error;
    }
  }

  /**
   * `send`, and `whenStale` when a statement prepared before no longer fits (only one prepared
   * before can meet a changed row type or be deallocated behind the cache).
   */
  async function sendUnlessStale(
    sql: string,
    params: readonly Parameter[],
    options: QueryOptions,
    whenStale: (error: unknown) => Promise<Results>,
  ): Promise<Results> {
    const wasPrepared = prepared.has(sql);
    try {
      return await send(sql, params, options);
    } catch (error) {
      if (!wasPrepared || !isStaleStatement(error)) throw error;
      return whenStale(error);
    }
  }

  async function run(sql: string, params: readonly unknown[], options: QueryOptions = {}): Promise<Results> {
    if (!isPlain(params)) return pg.query(sql, params as unknown[], options);
    await pg.waitReady;
    return pg._runExclusiveTransaction(() =>
      pg._runExclusiveQuery(async () => {
        // Parsed afresh, it runs once more: the refusal came before anything ran.
        const result = await sendUnlessStale(sql, params, options, () => send(sql, params, options));
        await pg.syncToFs();
        return result;
      }),
    );
  }

  async function runIn(
    tx: Transaction,
    sql: string,
    params: readonly unknown[],
    options: QueryOptions = {},
  ): Promise<Results> {
    if (!isPlain(params)) return tx.query(sql, params as unknown[], options);
    // What the transaction's own `query` says once it has ended.
    if (tx.closed) throw new Error('Transaction is closed');
    return pg._runExclusiveQuery(() =>
      // Not run again here: the refusal has aborted the transaction.
      sendUnlessStale(sql, params, options, async (error) => {
        forgetAll();
        throw new StalePreparedStatement(error);
      }),
    );
  }

  /** Every statement closed at the next send: after a stale one, the others may be stale too. */
  function forgetAll() {
    toClose.push(...prepared.values());
    prepared.clear();
  }

  return { run, runIn };
}
