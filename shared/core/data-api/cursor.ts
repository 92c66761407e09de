import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ColumnInfo, DataSourceInfo, Row } from '../database.js';
import { badRequest } from '../errors.js';

/**
 * Keyset continuation cursors (`getDataPaginate?after=`): the primary key of a page's last row,
 * with a MAC (HMAC-SHA-256, 128 bits kept) over the tenant, the data source, its key columns (the
 * order) and those values, under a signing key of the deployment. A cursor is opaque to callers,
 * and one that was altered, or made for another tenant, source or order, is refused without
 * reading; so is one whose values do not fit the key's columns (a MAC proves who made a cursor,
 * not that the key's columns are still of the types they were).
 */
export interface CursorSigner {
  /**
   * The deployment's signing keys (each at least 32 bytes of secret), newest first: the first
   * signs, any verifies, so that a key can be replaced without breaking the cursors in use.
   */
  readonly keys: readonly Uint8Array[];
  /** The tenant the cursor is bound to. */
  readonly tenant: string;
}

const MAC_BYTES = 16;
/**
 * Key kinds whose values survive JSON unchanged and compare in the database as they sort. Not
 * decimals (a driver may hand them over as doubles, which could put a cursor between two keys),
 * nor dates and times (their text differs between the databases) or binary: such sources link by
 * `fromRow`.
 */
const KEYSET_KINDS = new Set(['int', 'float', 'string', 'guid']);

/** Whether a source's pages continue by key: a primary key whose values a cursor can carry exactly. */
export function continuesByKey(source: DataSourceInfo): boolean {
  if (source.primaryKey.length === 0) return false;
  return source.primaryKey.every((key) => {
    const column = source.columns.find((c) => c.name === key);
    return column !== undefined && KEYSET_KINDS.has(column.kind);
  });
}

/** Integer types' ranges by the catalogue's type name (both databases); unknown ones as bigint. */
const BIGINT_RANGE: readonly [bigint, bigint] = [-(2n ** 63n), 2n ** 63n - 1n];
const INT_RANGES = new Map<string, readonly [bigint, bigint]>([
  ['tinyint', [0n, 255n]],
  ['smallint', [-32768n, 32767n]],
  ['int', [-2147483648n, 2147483647n]],
  ['integer', [-2147483648n, 2147483647n]],
  ['bigint', BIGINT_RANGE],
]);
/** The largest `real` (4-byte float) both databases hold. */
const REAL_MAX = 3.4028234663852886e38;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const GUID = /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/;

/** Whether `value` (from a cursor or token) is one the key column `column` can hold and compare. */
function fitsColumn(column: ColumnInfo, value: unknown): boolean {
  switch (column.kind) {
    case 'int': {
      // Integers as numbers; bigints past 2^53 as their decimal text (as makeCursor writes them).
      let n: bigint;
      if (typeof value === 'number' && Number.isSafeInteger(value)) n = BigInt(value);
      else if (typeof value === 'string' && /^-?(0|[1-9][0-9]{0,18})$/.test(value)) n = BigInt(value);
      else return false;
      const [least, most] = INT_RANGES.get(column.dataType.toLowerCase()) ?? BIGINT_RANGE;
      return n >= least && n <= most;
    }
    case 'float':
      return (
        typeof value === 'number' &&
        Number.isFinite(value) &&
        (!/^(real|float4)$/i.test(column.dataType) || Math.abs(value) <= REAL_MAX)
      );
    case 'string':
      // No NUL (PostgreSQL's text cannot hold it) and no lone surrogate (not UTF-8, not UTF-16 text).
      return typeof value === 'string' && !value.includes('\0') && !LONE_SURROGATE.test(value);
    case 'guid':
      return typeof value === 'string' && GUID.test(value);
    default:
      return false;
  }
}

/**
 * Whether `values` are a key of `source`: one value per key column, in order, each of a value the
 * column can hold. For cursors and sync tokens, whose values reach the database as parameters.
 */
export function fitsKey(source: DataSourceInfo, values: unknown): values is unknown[] {
  if (!Array.isArray(values) || values.length !== source.primaryKey.length) return false;
  return source.primaryKey.every((name, index) => {
    const column = source.columns.find((c) => c.name === name);
    return column !== undefined && fitsColumn(column, values[index]);
  });
}

function mac(key: Uint8Array, tenant: string, source: DataSourceInfo, payload: string): Buffer {
  return createHmac('sha256', key)
    .update(
      JSON.stringify([
        'paging-cursor',
        tenant,
        source.schema.toLowerCase(),
        source.name.toLowerCase(),
        source.primaryKey,
      ]),
    )
    .update('\n')
    .update(payload)
    .digest()
    .subarray(0, MAC_BYTES);
}

/** The cursor that continues right after `lastRow` (a row read with the key's columns). */
export function makeCursor(signer: CursorSigner, source: DataSourceInfo, lastRow: Row): string {
  const values = source.primaryKey.map((key) => {
    const value = lastRow[key];
    return typeof value === 'bigint' ? value.toString() : value;
  });
  const payload = Buffer.from(JSON.stringify(values)).toString('base64url');
  return `${payload}.${mac(signer.keys[0]!, signer.tenant, source, payload).toString('base64url')}`;
}

/** The key values a cursor continues after; 400 `invalid_cursor` when it is not one of ours for this source. */
export function readCursor(signer: CursorSigner, source: DataSourceInfo, cursor: string): unknown[] {
  const invalid = badRequest(
    'invalid_cursor',
    'The query parameter "after" is not a cursor of this data source: follow the Link of a previous page',
  );
  const match = /^([A-Za-z0-9_-]{1,4096})\.([A-Za-z0-9_-]{22})$/.exec(cursor);
  if (!match || !continuesByKey(source)) throw invalid;
  const [, payload, tag] = match as unknown as [string, string, string];
  if (!signedWithAny(signer.keys, tag, (key) => mac(key, signer.tenant, source, payload))) throw invalid;
  let values: unknown;
  try {
    values = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw invalid;
  }
  if (!fitsKey(source, values)) throw invalid;
  return values;
}

/**
 * Whether `tag` (base64url) is the MAC `macWith` makes under one of `keys`; each compared in
 * constant time, every key tried, so that the time says nothing about which key matched.
 */
export function signedWithAny(
  keys: readonly Uint8Array[],
  tag: string,
  macWith: (key: Uint8Array) => Buffer,
): boolean {
  const given = Buffer.from(tag, 'base64url');
  let found = false;
  for (const key of keys) {
    const expected = macWith(key);
    if (given.length === expected.length && timingSafeEqual(given, expected)) found = true;
  }
  return found;
}
