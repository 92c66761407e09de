import { createHmac, timingSafeEqual } from 'node:crypto';
import type { DataSourceInfo, Row } from '../database.js';
import { badRequest } from '../errors.js';

/**
 * Keyset continuation cursors (`getDataPaginate?after=`): the primary key of a page's last row,
 * with a MAC (HMAC-SHA-256, 128 bits kept) over the tenant, the data source, its key columns (the
 * order) and those values, under a key of the deployment. A cursor is opaque to callers, and one
 * that was altered, or made for another tenant, source or order, is refused without reading.
 */
export interface CursorSigner {
  /** The key of the deployment the MAC is made with (at least 32 bytes of secret). */
  readonly key: Uint8Array;
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

function mac(signer: CursorSigner, source: DataSourceInfo, payload: string): Buffer {
  return createHmac('sha256', signer.key)
    .update(
      JSON.stringify([
        signer.tenant,
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
  return `${payload}.${mac(signer, source, payload).toString('base64url')}`;
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
  const given = Buffer.from(tag, 'base64url');
  const expected = mac(signer, source, payload);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid;
  let values: unknown;
  try {
    values = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw invalid;
  }
  if (!Array.isArray(values) || values.length !== source.primaryKey.length) throw invalid;
  if (!values.every((v) => typeof v === 'string' || typeof v === 'number')) throw invalid;
  return values;
}
