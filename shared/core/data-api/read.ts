import { type Answer, type AnswerLimits, AnswerWriter } from '../answers.js';
import type { SourceGrant } from '../auth/caller.js';
import { type Condition, ConditionError, checkCondition } from '../condition/index.js';
import {
  DatabasePermissionError,
  DatabaseStatementError,
  type DataSourceInfo,
  type Row,
} from '../database.js';
import { badRequest } from '../errors.js';
import { chooseColumns, type HiddenColumns, visibleDataSource } from './columns.js';
import { type CursorSigner, continuesByKey, makeCursor, readCursor } from './cursor.js';
import { type AllowedDataSources, parseDataSourceName, resolveDataSource } from './data-source.js';
import type { DataSourceReader } from './reader.js';
import { recordEncoder } from './records.js';

export interface DataApiContext {
  /** The tenant reading: of the service's records that tenants share, its own rows only. */
  readonly tenant: string;
  readonly reader: DataSourceReader;
  readonly allowed: AllowedDataSources;
  /** The tenant's hidden columns: never read, named nowhere. */
  readonly hidden?: HiddenColumns;
  /** Signs and checks `getDataPaginate`'s continuation cursors; without it, pages link by `fromRow`. */
  readonly cursors?: CursorSigner;
  readonly limits: AnswerLimits;
  /** Rows fetched from the database per batch. */
  readonly batchRows: number;
  /**
   * What a bearer token's scopes let the caller use (CONTRACT 4d), checked once a source is found
   * and served; a Basic user's grant permits every source.
   */
  readonly grant?: SourceGrant;
}

export const MAX_PAGE_ROWS = 10_000;

/** Where the next page of a `getDataPaginate` answer starts: a cursor, or a row number. */
export type NextPage = { readonly after: string } | { readonly fromRow: number };

/** A read's answer; a full page of `getDataPaginate` also says where the next one starts. */
export type DataAnswer = Answer & { readonly next?: NextPage };

/**
 * Streams `{"<root>":[record, ...]}` batch by batch into an answer; also gives the last row read and
 * how many. `encode` writes a row's record (default: the source's columns read).
 */
export async function writeRecords(
  ctx: Pick<DataApiContext, 'limits'>,
  rootKey: string,
  source: DataSourceInfo,
  rows: AsyncIterable<Row[]>,
  encode: (row: Row) => string = recordEncoder(source.selected ?? source.columns),
): Promise<{ answer: Answer; count: number; last: Row | undefined }> {
  const writer = new AnswerWriter(ctx.limits, 'application/json; charset=utf-8', 'json');
  try {
    const open = `{${JSON.stringify(rootKey)}:[`;
    let count = 0;
    let last: Row | undefined;
    // Each batch's records are joined from an array: one flat string, where text built by `+=`
    // would be a rope of tens of thousands of pieces that every later reader (its byte count, the
    // answer's join, the ETag) copies flat first. The first batch is held until it is known
    // whether it is the only one: a page read in one batch is then one join with the answer's
    // opening and closing, never copied again to join the answer (profiled: docs/development.md,
    // "Reads of issue 20"); a later batch is written as it comes, so memory stays bounded.
    let only: string[] | undefined;
    for await (const batch of rows) {
      if (batch.length === 0) continue;
      const records = new Array<string>(batch.length);
      for (let i = 0; i < batch.length; i++) records[i] = encode(batch[i]!);
      records[0] = (count === 0 ? open : ',') + records[0];
      const isFirst = count === 0;
      count += batch.length;
      last = batch[batch.length - 1];
      if (only) {
        await writer.write(only.join(','));
        only = undefined;
      }
      if (isFirst) only = records;
      else await writer.write(records.join(','));
    }
    if (only) {
      only[only.length - 1] += ']}';
      await writer.write(only.join(','));
    } else {
      await writer.write(count === 0 ? `${open}]}` : ']}');
    }
    return { answer: await writer.finish(), count, last };
  } catch (error) {
    await writer.abort();
    throw error;
  }
}

// Error codes of PostgreSQL (SQLSTATE) and SQL Server (error number) for a column or a table that
// is not there: an object changed since its columns were looked up.
const OBJECT_CHANGED = new Set(['42703', '42P01', '207', '208']);

/**
 * Resolves the data source and reads it. The catalogue's answer is remembered for a while (see
 * `rememberedCatalogue`); when the database then says that a column or the object itself is not
 * there, the table changed since: the remembered answer is forgotten and the read runs once more on
 * a fresh lookup, so a changed table is answered as it is now and a dropped one (or one the login
 * may no longer read) is a 404, never a failure of the service.
 */
export async function readCurrent<T>(
  ctx: DataApiContext,
  rawName: string,
  read: (source: DataSourceInfo) => Promise<T>,
): Promise<T> {
  const catalogue = ctx.reader.catalogue;
  const resolve = async () => {
    const found = await resolveDataSource(catalogue, rawName, ctx.allowed, ctx.tenant);
    ctx.grant?.check(found);
    return visibleDataSource(found, ctx.hidden);
  };
  const source = await resolve();
  try {
    return await read(source);
  } catch (error) {
    // A permission taken away since the lookup is a change too: the fresh lookup no longer finds
    // what the login may not read (404, CONTRACT.md section 7).
    const changed =
      (error instanceof DatabaseStatementError && OBJECT_CHANGED.has(error.dbCode ?? '')) ||
      error instanceof DatabasePermissionError;
    if (!changed) throw error;
    const name = parseDataSourceName(rawName);
    if (!catalogue.forgetDataSource?.(name.schema, name.name)) throw error;
    return read(await resolve());
  }
}

/** `getData`: every row of a table or view (`columns`: only those columns). */
export async function getData(ctx: DataApiContext, rawName: string, columns?: string): Promise<DataAnswer> {
  return readCurrent(ctx, rawName, async (visible) => {
    const source = chooseColumns(visible, columns);
    return (await writeRecords(ctx, rawName, source, ctx.reader.readAll(source, ctx.batchRows))).answer;
  });
}

/** `getDataWithCondition`: rows that satisfy a checked T-SQL condition. */
export async function getDataWithCondition(
  ctx: DataApiContext,
  rawName: string,
  condition: string | undefined,
  columns?: string,
): Promise<DataAnswer> {
  if (condition === undefined || condition.trim() === '') {
    throw badRequest('invalid_condition', 'The query parameter "condition" is required');
  }
  try {
    return await readCurrent(ctx, rawName, async (visible) => {
      const source = chooseColumns(visible, columns);
      let rows: AsyncIterable<Row[]>;
      try {
        // Every visible column may be tested, chosen or not; a hidden one is unknown here.
        const checked: Condition = checkCondition(condition, source.columns);
        rows = ctx.reader.readMatching(source, checked, ctx.batchRows);
      } catch (error) {
        if (error instanceof ConditionError) throw badRequest('invalid_condition', error.message);
        throw error;
      }
      return (await writeRecords(ctx, rawName, source, rows)).answer;
    });
  } catch (error) {
    // The condition is checked, so what the database still refuses is a value that does not fit
    // its column (e.g. ID = 'abc'): the caller's mistake, answered without the database's text.
    if (error instanceof DatabaseStatementError) {
      throw badRequest(
        'invalid_condition',
        `The condition could not be evaluated: ${evaluationProblem(error)}`,
      );
    }
    throw error;
  }
}

// Error codes of PostgreSQL (SQLSTATE) and SQL Server (error number) that the caller's condition causes.
const DIVISION_BY_ZERO = new Set(['22012', '8134']);
const OUT_OF_RANGE = new Set(['22003', '220', '232', '517', '535', '8115']);
const NEGATIVE_LENGTH = new Set(['22011', '536', '537']);

/** What went wrong in words, never in the database's own text (it may quote SQL). */
function evaluationProblem(error: DatabaseStatementError): string {
  const code = error.dbCode ?? '';
  if (DIVISION_BY_ZERO.has(code)) return 'division by zero';
  if (OUT_OF_RANGE.has(code)) return 'a number or date is out of the range of its type';
  if (NEGATIVE_LENGTH.has(code)) return 'a negative length was given to SUBSTRING, LEFT or RIGHT';
  return 'a value does not fit the type of what it is compared with';
}

/** `getRowsCount`: `{"<root>":[{"rowsCount":N}]}`. */
export async function getRowsCount(ctx: DataApiContext, rawName: string): Promise<DataAnswer> {
  const count = await readCurrent(ctx, rawName, (source) => ctx.reader.count(source));
  const body = JSON.stringify({ [rawName]: [{ rowsCount: count }] });
  return { kind: 'inline' as const, body: Buffer.from(body), contentType: 'application/json; charset=utf-8' };
}

/** A paging parameter: an integer from 1 to `max`; missing or anything else is a 400 `invalid_paging`. */
export function pagingNumber(name: string, raw: string | undefined, max: number): number {
  if (raw === undefined || raw.trim() === '') {
    throw badRequest('invalid_paging', `The query parameter "${name}" is required`);
  }
  const value = Number(raw);
  if (!/^\s*\d+\s*$/.test(raw) || !Number.isSafeInteger(value) || value < 1 || value > max) {
    throw badRequest(
      'invalid_paging',
      `The query parameter "${name}" must be an integer from 1 to ${max}, got "${raw.slice(0, 40)}"`,
    );
  }
  return value;
}

/** What `getDataPaginate` is asked: query parameters as given (undefined when absent). */
export interface PageRequest {
  readonly fromRow?: string;
  readonly rows?: string;
  /** A cursor of a previous page's `next` link. */
  readonly after?: string;
  readonly columns?: string;
}

/**
 * `getDataPaginate`: `rows` rows starting at the 1-based row `fromRow`, or right after the row a
 * cursor (`after`) names. A page with as many rows as asked tells where the next one starts: by
 * cursor where the source continues by key, else by row number.
 */
export async function getDataPaginate(
  ctx: DataApiContext,
  rawName: string,
  page: PageRequest,
): Promise<DataAnswer> {
  if (page.after !== undefined && page.fromRow !== undefined) {
    throw badRequest('invalid_paging', 'Give either "fromRow" or "after", not both');
  }
  const fromRow =
    page.after === undefined ? pagingNumber('fromRow', page.fromRow, Number.MAX_SAFE_INTEGER) : 0;
  const rows = pagingNumber('rows', page.rows, MAX_PAGE_ROWS);
  return readCurrent(ctx, rawName, async (visible) => {
    const source = chooseColumns(visible, page.columns);
    const keyed = ctx.cursors !== undefined && continuesByKey(source);
    let read: AsyncIterable<Row[]>;
    if (page.after !== undefined) {
      if (!ctx.cursors) throw badRequest('invalid_cursor', 'Paging by cursor is not available here');
      const after = readCursor(ctx.cursors, source, page.after);
      read = ctx.reader.readAfter(source, after, rows, ctx.batchRows);
    } else {
      read = ctx.reader.readPage(source, fromRow - 1, rows, ctx.batchRows);
    }
    const { answer, count, last } = await writeRecords(ctx, rawName, source, read);
    if (count < rows || !last) return answer;
    const next: NextPage =
      keyed && ctx.cursors ? { after: makeCursor(ctx.cursors, source, last) } : { fromRow: fromRow + rows };
    return { ...answer, next };
  });
}
