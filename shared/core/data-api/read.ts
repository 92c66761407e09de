import { type AnswerLimits, AnswerWriter } from '../answers.js';
import { ConditionError, compileCondition } from '../condition/index.js';
import { type ColumnInfo, type Database, DatabaseStatementError, type DataSourceInfo } from '../database.js';
import { badRequest } from '../errors.js';
import { type AllowedDataSources, resolveDataSource } from './data-source.js';
import { encodeRecord } from './records.js';

export interface DataApiContext {
  readonly db: Database;
  readonly allowed: AllowedDataSources;
  readonly limits: AnswerLimits;
  /** Rows fetched from the database per batch. */
  readonly batchRows: number;
}

export const MAX_PAGE_ROWS = 10_000;

// Types SQL Server cannot sort by; ordering on them would fail.
const UNSORTABLE_TYPES = new Set(['text', 'ntext', 'image', 'xml', 'sql_variant', 'geography', 'geometry']);

/** Deterministic order: the primary key, else every sortable column in ordinal order. */
function orderBy(db: Database, source: DataSourceInfo): string {
  const columns =
    source.primaryKey.length > 0
      ? source.primaryKey
      : source.columns
          .filter((c) => c.kind !== 'binary' && c.kind !== 'other' && !UNSORTABLE_TYPES.has(c.dataType))
          .map((c) => c.name);
  if (columns.length === 0) return db.dialect.name === 'mssql' ? 'ORDER BY (SELECT NULL)' : '';
  return `ORDER BY ${columns.map((c) => db.dialect.quoteIdent(c)).join(', ')}`;
}

function fromClause(db: Database, source: DataSourceInfo): string {
  return `${db.dialect.quoteIdent(source.schema)}.${db.dialect.quoteIdent(source.name)}`;
}

function selectList(db: Database, columns: readonly ColumnInfo[]): string {
  return columns.map((c) => db.dialect.quoteIdent(c.name)).join(', ');
}

/** Streams `{"<root>":[record, ...]}` batch by batch into an answer. */
async function writeRecords(
  ctx: DataApiContext,
  rootKey: string,
  source: DataSourceInfo,
  sql: string,
  params: readonly unknown[],
) {
  const writer = new AnswerWriter(ctx.limits, 'application/json; charset=utf-8', 'json');
  try {
    await writer.write(`{${JSON.stringify(rootKey)}:[`);
    let first = true;
    for await (const batch of ctx.db.streamBatches(sql, params, ctx.batchRows)) {
      let text = '';
      for (const row of batch) {
        text += (first ? '' : ',') + JSON.stringify(encodeRecord(row, source.columns));
        first = false;
      }
      await writer.write(text);
    }
    await writer.write(']}');
    return await writer.finish();
  } catch (error) {
    await writer.abort();
    throw error;
  }
}

/** `getData`: every row of a table or view. */
export async function getData(ctx: DataApiContext, rawName: string) {
  const source = await resolveDataSource(ctx.db, rawName, ctx.allowed);
  const sql = `SELECT ${selectList(ctx.db, source.columns)} FROM ${fromClause(ctx.db, source)} ${orderBy(ctx.db, source)}`;
  return writeRecords(ctx, rawName, source, sql, []);
}

/** `getDataWithCondition`: rows that satisfy a checked T-SQL condition. */
export async function getDataWithCondition(
  ctx: DataApiContext,
  rawName: string,
  condition: string | undefined,
) {
  if (condition === undefined || condition.trim() === '') {
    throw badRequest('invalid_condition', 'The query parameter "condition" is required');
  }
  const source = await resolveDataSource(ctx.db, rawName, ctx.allowed);
  let compiled: { sql: string; params: unknown[] };
  try {
    compiled = compileCondition(condition, source.columns, ctx.db.dialect, 1);
  } catch (error) {
    if (error instanceof ConditionError) throw badRequest('invalid_condition', error.message);
    throw error;
  }
  const sql =
    `SELECT ${selectList(ctx.db, source.columns)} FROM ${fromClause(ctx.db, source)} ` +
    `WHERE ${compiled.sql} ${orderBy(ctx.db, source)}`;
  try {
    return await writeRecords(ctx, rawName, source, sql, compiled.params);
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
export async function getRowsCount(ctx: DataApiContext, rawName: string) {
  const source = await resolveDataSource(ctx.db, rawName, ctx.allowed);
  const count = ctx.db.dialect.name === 'mssql' ? 'COUNT_BIG(*)' : 'count(*)';
  const rows = await ctx.db.query(
    `SELECT ${count} AS ${ctx.db.dialect.quoteIdent('n')} FROM ${fromClause(ctx.db, source)}`,
  );
  const body = JSON.stringify({ [rawName]: [{ rowsCount: Number(rows[0]?.n ?? 0) }] });
  return { kind: 'inline' as const, body: Buffer.from(body), contentType: 'application/json; charset=utf-8' };
}

function pagingNumber(name: string, raw: string | undefined, max: number): number {
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

/** `getDataPaginate`: `rows` rows starting at the 1-based row `fromRow`. */
export async function getDataPaginate(
  ctx: DataApiContext,
  rawName: string,
  fromRowRaw: string | undefined,
  rowsRaw: string | undefined,
) {
  const fromRow = pagingNumber('fromRow', fromRowRaw, Number.MAX_SAFE_INTEGER);
  const rows = pagingNumber('rows', rowsRaw, MAX_PAGE_ROWS);
  const source = await resolveDataSource(ctx.db, rawName, ctx.allowed);
  const sql =
    `SELECT ${selectList(ctx.db, source.columns)} FROM ${fromClause(ctx.db, source)} ${orderBy(ctx.db, source)} ` +
    ctx.db.dialect.paginate(ctx.db.dialect.param(1), ctx.db.dialect.param(2));
  return writeRecords(ctx, rawName, source, sql, [fromRow - 1, rows]);
}
