import { createHmac } from 'node:crypto';
import { type Answer, AnswerWriter, jsonTextLength } from '../answers.js';
import type { ColumnInfo, DataSourceInfo, Row } from '../database.js';
import { badRequest, ServiceError } from '../errors.js';
import { parseQualifiedName } from '../sql-names.js';
import { chooseColumns } from './columns.js';
import { continuesByKey, fitsKey, signedWithAny } from './cursor.js';
import type { DataSourceCatalogue } from './data-source.js';
import { type DataApiContext, MAX_PAGE_ROWS, pagingNumber, readCurrent } from './read.js';
import { recordEncoder } from './records.js';

/**
 * The change feed (CONTRACT 4b): `getChanges` starts a sync with the source's rows in key order,
 * then answers what changed since a sync token, net per key, as current records and tombstones.
 *
 * How nothing committed is missed: the database records the keys each write touches (a trigger,
 * in the writer's transaction) without an order; a read first *stamps* every change already
 * committed with the next batch number, under the feed's lock (see {@link ChangeFeedStore.stamp}).
 * A transaction still open is not stamped, whenever it began: it gets a later batch when it
 * commits. A token stands for "every batch up to N read", so the next sync reads batches after N
 * and meets every commit that became visible since, in whatever order transactions committed.
 */

/** A recorded table's state in its database (table SVC_CHANGE_FEED). */
export interface ChangeFeedState {
  /** The recording's identity: new when a table is turned on again (its earlier tokens expire). */
  readonly feedId: string;
  /** The last batch number given; every committed change up to it is stamped. */
  readonly lastBatch: number;
  /** Changes of batches up to this one were removed by the retention clean-up. */
  readonly removedToBatch: number;
}

/**
 * Port: a tenant database's recorded changes. Rows of {@link readChanges} hold the key columns
 * (always), the other columns read (NULL for a deleted row), and {@link REMOVED_COLUMN}: 1 when no
 * row of that key exists any more.
 */
export interface ChangeFeedStore {
  /**
   * Gives every committed change not yet stamped the next batch number, then the feed's state;
   * undefined when the table's changes are not recorded in this database.
   */
  stamp(source: DataSourceInfo): Promise<ChangeFeedState | undefined>;
  /** The feed's state as it is, without stamping; undefined when not recorded. */
  state(source: DataSourceInfo): Promise<ChangeFeedState | undefined>;
  /**
   * The keys changed in batches `from` < batch <= `to`, each once, in key order, after `after`
   * (the key's values of the row before) when given, at most `rows`; with each key's current row.
   */
  readChanges(
    source: DataSourceInfo,
    range: { readonly from: number; readonly to: number },
    after: readonly unknown[] | undefined,
    rows: number,
    batchRows: number,
  ): AsyncIterable<Row[]>;
  /** Removes changes stamped before `before` (stamping first); how many change rows went. */
  removeStampedBefore(source: DataSourceInfo, before: Date): Promise<number>;
  /**
   * The traces of the writes in batches `from` < batch <= `to` (CONTRACT 8a): the distinct
   * `traceparent`s the service's own writes left on their changes (the ERP's own writes leave
   * none), at most `limit`, as stored (unchecked: the caller parses them).
   */
  writers(
    source: Pick<DataSourceInfo, 'schema' | 'name'>,
    range: { readonly from: number; readonly to: number },
    limit: number,
  ): Promise<string[]>;
}

/** The column of a changed row that says it was deleted (1) or is there (0). */
export const REMOVED_COLUMN = '@removed';

/** What a tenant's change feed needs besides the Data API's read context. */
export interface ChangeFeedContext {
  readonly store: ChangeFeedStore;
  /** The data sources the tenant records (registry `changeFeed`), `NAME` or `schema.NAME`. */
  readonly recorded: readonly string[];
  /** How long a token stays good (registry `changeRetentionDays`). */
  readonly retentionDays: number;
  /**
   * Signs and checks sync tokens: the deployment's signing keys (newest first: the first signs,
   * any verifies) and the tenant they are bound to.
   */
  readonly tokens: { readonly keys: readonly Uint8Array[]; readonly tenant: string };
  readonly now?: () => number;
}

/** What `getChanges` is asked: query parameters as given (undefined when absent). */
export interface ChangesRequest {
  readonly token?: string;
  readonly rows?: string;
  readonly columns?: string;
}

/** A page of changes and the link that follows it: `next` while more, else `sync`. */
export interface ChangesAnswer {
  readonly answer: Answer;
  readonly link: { readonly rel: 'next' | 'sync'; readonly token: string };
}

export const DEFAULT_CHANGE_ROWS = 1000;
const DAY_MS = 86_400_000;
const MAC_BYTES = 16;

/** A token's content. `i`: the initial sync, rows after `a` as of batch `b`; `c`: changes after batch `b` (to `t`, after `a`). */
type TokenState =
  | {
      readonly k: 'i';
      readonly f: string;
      readonly b: number;
      readonly a: readonly unknown[];
      readonly at: number;
    }
  | {
      readonly k: 'c';
      readonly f: string;
      readonly b: number;
      readonly t?: number;
      readonly a?: readonly unknown[];
      readonly at: number;
    };

function tokenMac(key: Uint8Array, ctx: ChangeFeedContext, source: DataSourceInfo, payload: string): Buffer {
  const columns = (source.selected ?? []).map((c) => c.name);
  return createHmac('sha256', key)
    .update(
      JSON.stringify([
        'sync-token',
        ctx.tokens.tenant,
        source.schema.toLowerCase(),
        source.name.toLowerCase(),
        source.primaryKey,
        source.selected ? columns : '*',
      ]),
    )
    .update('\n')
    .update(payload)
    .digest()
    .subarray(0, MAC_BYTES);
}

function makeToken(ctx: ChangeFeedContext, source: DataSourceInfo, state: TokenState): string {
  const payload = Buffer.from(JSON.stringify(state)).toString('base64url');
  return `${payload}.${tokenMac(ctx.tokens.keys[0]!, ctx, source, payload).toString('base64url')}`;
}

const invalidToken = () =>
  badRequest(
    'invalid_sync_token',
    'The query parameter "token" is not a sync token of this data source and these columns: follow the Link of a previous answer with the same "columns", or start again without a token',
  );

const isBatch = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

function readToken(ctx: ChangeFeedContext, source: DataSourceInfo, token: string): TokenState {
  const match = /^([A-Za-z0-9_-]{1,8192})\.([A-Za-z0-9_-]{22})$/.exec(token);
  if (!match) throw invalidToken();
  const [, payload, tag] = match as unknown as [string, string, string];
  if (!signedWithAny(ctx.tokens.keys, tag, (key) => tokenMac(key, ctx, source, payload)))
    throw invalidToken();
  let state: Record<string, unknown>;
  try {
    state = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw invalidToken();
  }
  // Ours by its MAC; checked all the same, so that a token of a later version is refused cleanly.
  const shapeOk =
    typeof state === 'object' &&
    state !== null &&
    typeof state.f === 'string' &&
    isBatch(state.b) &&
    isBatch(state.at) &&
    ((state.k === 'i' && fitsKey(source, state.a)) ||
      (state.k === 'c' &&
        (state.t === undefined || (isBatch(state.t) && state.t >= state.b)) &&
        (state.a === undefined || (state.t !== undefined && fitsKey(source, state.a)))));
  if (!shapeOk) throw invalidToken();
  return state as unknown as TokenState;
}

const expired = (why: string) =>
  new ServiceError(
    410,
    'sync_token_expired',
    `This sync token has expired (${why}): start again without a token, which reads every row again, and replace your copy with what it answers`,
  );

const pageRows = (raw: string | undefined) =>
  raw === undefined ? DEFAULT_CHANGE_ROWS : pagingNumber('rows', raw, MAX_PAGE_ROWS);

/** Whether the tenant's `changeFeed` lists this source (`NAME` or `schema.NAME`, case-insensitive). */
export function isRecorded(
  recorded: readonly string[],
  source: Pick<DataSourceInfo, 'schema' | 'name'>,
): boolean {
  const bare = source.name.toLowerCase();
  const qualified = `${source.schema}.${source.name}`.toLowerCase();
  return recorded.some((entry) => {
    const lower = entry.toLowerCase();
    return lower === bare || lower === qualified;
  });
}

/** `columns=` as in 4a, with the key's columns added after those chosen where not among them. */
function changeColumns(source: DataSourceInfo, raw: string | undefined): DataSourceInfo {
  const chosen = chooseColumns(source, raw);
  if (!chosen.selected) return chosen;
  const names = new Set(chosen.selected.map((c) => c.name));
  const keys = source.columns.filter((c) => source.primaryKey.includes(c.name) && !names.has(c.name));
  return { ...chosen, selected: [...chosen.selected, ...keys] };
}

/** A tombstone's text: the key's values and `"@removed":{"reason":"deleted"}`. */
/**
 * One page of the feed, always inline: records are taken while the page still fits the inline
 * limits, and the page is cut before the first that would not (its `next` link continues from the
 * last one taken). A page is never a redirect to stored content, which a client that follows
 * redirects (curl -L, fetch) would read without the Link header and so stop syncing; only a record
 * larger than the limits on its own is, alone on its page.
 */
async function writeChangePage(
  ctx: Pick<DataApiContext, 'limits'>,
  rootKey: string,
  rows: AsyncIterable<Row[]>,
  encode: (row: Row) => string,
): Promise<{ answer: Answer; count: number; last: Row | undefined; cut: boolean }> {
  const { inlineLimitBytes, inlineEncodedLimitBytes } = ctx.limits;
  const open = `{${JSON.stringify(rootKey)}:[`;
  const close = ']}';
  const records: string[] = [];
  let bytes = Buffer.byteLength(open) + close.length;
  let encoded = jsonTextLength(open) + close.length;
  let last: Row | undefined;
  const fits = (moreBytes: number, moreEncoded: number) =>
    bytes + moreBytes <= inlineLimitBytes &&
    (inlineEncodedLimitBytes === undefined || encoded + moreEncoded <= inlineEncodedLimitBytes);
  for await (const batch of rows) {
    for (const row of batch) {
      const record = encode(row);
      const separator = records.length === 0 ? 0 : 1;
      const recordBytes = Buffer.byteLength(record, 'utf8') + separator;
      const recordEncoded = jsonTextLength(record) + separator;
      if (!fits(recordBytes, recordEncoded)) {
        if (records.length > 0) {
          return { answer: inline(open + records.join(',') + close), count: records.length, last, cut: true };
        }
        // Larger than the limits on its own: alone, and stored (the one case of a redirect).
        const writer = new AnswerWriter(ctx.limits, 'application/json; charset=utf-8', 'json');
        try {
          await writer.write(open + record + close);
          return { answer: await writer.finish(), count: 1, last: row, cut: true };
        } catch (error) {
          await writer.abort();
          throw error;
        }
      }
      records.push(record);
      bytes += recordBytes;
      encoded += recordEncoded;
      last = row;
    }
  }
  return { answer: inline(open + records.join(',') + close), count: records.length, last, cut: false };
}

const inline = (body: string): Answer => ({
  kind: 'inline',
  body,
  contentType: 'application/json; charset=utf-8',
});

function changeEncoder(encode: (row: Row) => string, encodeKey: (row: Row) => string): (row: Row) => string {
  return (row) => {
    if (Number(row[REMOVED_COLUMN]) !== 1) return encode(row);
    const key = encodeKey(row);
    return `${key.slice(0, -1)},"@removed":{"reason":"deleted"}}`;
  };
}

/**
 * `getChanges`: without a token the first page of the source's rows in key order; with one, the
 * page it stands for. Every page links on: `next` while more, `sync` on the last.
 */
export async function getChanges(
  ctx: DataApiContext,
  feed: ChangeFeedContext,
  rawName: string,
  request: ChangesRequest,
): Promise<ChangesAnswer> {
  const rows = pageRows(request.rows);
  const now = feed.now ?? Date.now;
  return readCurrent(ctx, rawName, async (visible) => {
    if (!isRecorded(feed.recorded, visible)) {
      throw badRequest(
        'changes_not_recorded',
        `The changes of ${rawName} are not recorded: the tenant's "changeFeed" setting does not list it (docs/configuration.md, "Change feed")`,
      );
    }
    if (visible.kind !== 'table' || !continuesByKey(visible)) {
      throw badRequest(
        'changes_not_recorded',
        `The changes of ${rawName} cannot be followed: it needs a visible primary key of integer, text or GUID columns`,
      );
    }
    if (visible.rowScope) {
      // The change tables hold every tenant's rows of a table tenants share: not followed there.
      throw badRequest(
        'changes_not_recorded',
        `The changes of ${rawName} are not recorded: it holds the service's records of every tenant of the database; read it with getDataPaginate`,
      );
    }
    const source = changeColumns(visible, request.columns);
    const notInstalled = () =>
      badRequest(
        'changes_not_recorded',
        `The changes of ${rawName} are not recorded in the tenant's database: its administrator turns recording on with npm run db:apply (docs/sql-server.md, "Change feed")`,
      );
    const { keyColumns, encode } = encoders(source);
    const keyOf = (row: Row) => source.primaryKey.map((k) => normaliseKey(row[k]));
    const write = (read: AsyncIterable<Row[]>) =>
      writeChangePage(ctx, rawName, read, changeEncoder(encode, keyColumns));

    const token = request.token === undefined ? undefined : readToken(feed, source, request.token);
    if (token && now() - token.at > feed.retentionDays * DAY_MS) {
      throw expired(`it is older than the ${feed.retentionDays} days changes are kept`);
    }
    // A new sync needs only a recording; a token needs the same recording, with every change
    // after its batch still there, and no batch it has seen missing from it.
    const check = (state: ChangeFeedState | undefined, after?: number): ChangeFeedState => {
      if (!state) {
        if (token) throw expired('the changes of this data source are no longer recorded');
        throw notInstalled();
      }
      if (!token || after === undefined) return state;
      if (state.feedId.toUpperCase() !== token.f.toUpperCase()) {
        throw expired('the recording of this data source was started again');
      }
      if (state.removedToBatch > after) throw expired('changes since it were removed');
      // A token of a batch the feed has not reached: the database went back behind it (restored
      // from a backup, or reset). The batches it read are gone and their numbers are given again
      // to other changes, so reading on from it would miss those and never undo what it read.
      const reached = token.k === 'c' && token.t !== undefined ? token.t : token.b;
      if (reached > state.lastBatch) {
        throw expired('the change feed is behind it: the database was restored from a backup or reset since');
      }
      return state;
    };
    const link = (rel: 'next' | 'sync', state: TokenState) => ({
      rel,
      token: makeToken(feed, source, state),
    });

    if (!token || token.k === 'i') {
      // The initial sync: the rows as they are, in key order; the changes after its first
      // stamp follow it (a row changed meanwhile comes again: at least once, never missed).
      const state = token
        ? check(await feed.store.state(source), token.b)
        : check(await feed.store.stamp(source));
      const start = token ? token.b : state.lastBatch;
      const at = token ? token.at : now();
      const read = token
        ? ctx.reader.readAfter(source, token.a, rows, ctx.batchRows)
        : ctx.reader.readPage(source, 0, rows, ctx.batchRows);
      const { answer, count, last, cut } = await write(read);
      if ((count === rows || cut) && last) {
        return { answer, link: link('next', { k: 'i', f: state.feedId, b: start, a: keyOf(last), at }) };
      }
      return { answer, link: link('sync', { k: 'c', f: state.feedId, b: start, at }) };
    }

    // Changes since batch b: stamped now on the first page, up to the batch the first page saw.
    const state = check(
      token.t === undefined ? await feed.store.stamp(source) : await feed.store.state(source),
      token.b,
    );
    const to = token.t ?? state.lastBatch;
    const { answer, count, last, cut } = await write(
      feed.store.readChanges(source, { from: token.b, to }, token.a, rows, ctx.batchRows),
    );
    if ((count === rows || cut) && last) {
      return {
        answer,
        link: link('next', { k: 'c', f: state.feedId, b: token.b, t: to, a: keyOf(last), at: token.at }),
      };
    }
    return { answer, link: link('sync', { k: 'c', f: state.feedId, b: to, at: now() }) };
  });
}

/** A key value as a token carries it: bigints (SQL Server's bigint) as text. */
function normaliseKey(value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}

function encoders(source: DataSourceInfo): {
  encode: (row: Row) => string;
  keyColumns: (row: Row) => string;
} {
  const columns: readonly ColumnInfo[] = source.selected ?? source.columns;
  const keys = source.primaryKey.map((k) => source.columns.find((c) => c.name === k)!);
  return { encode: recordEncoder(columns), keyColumns: recordEncoder(keys) };
}

/** What one retention clean-up did for one recorded table. */
export interface RetentionOutcome {
  readonly source: string;
  /** Change rows removed; undefined when the table could not be cleaned (see `problem`). */
  readonly removed?: number;
  readonly problem?: string;
}

/**
 * The retention clean-up of one tenant (CONTRACT 4b): for each recorded table, the changes stamped
 * more than `retentionDays` ago are removed (their tokens answer 410 from then on). A table that
 * is not there or not recorded in the database is reported, and the others are cleaned all the same.
 */
export async function removeExpiredChanges(
  catalogue: Pick<DataSourceCatalogue, 'findDataSource'>,
  store: ChangeFeedStore,
  recorded: readonly string[],
  retentionDays: number,
  now: number,
): Promise<RetentionOutcome[]> {
  const outcomes: RetentionOutcome[] = [];
  for (const entry of recorded) {
    const name = parseQualifiedName(entry);
    const source = name ? await catalogue.findDataSource(name.schema, name.name) : undefined;
    if (source?.kind !== 'table') {
      outcomes.push({ source: entry, problem: 'no such table in the database' });
      continue;
    }
    if (!(await store.state(source))) {
      outcomes.push({ source: entry, problem: 'its changes are not recorded in the database' });
      continue;
    }
    const removed = await store.removeStampedBefore(source, new Date(now - retentionDays * DAY_MS));
    outcomes.push({ source: entry, removed });
  }
  return outcomes;
}
