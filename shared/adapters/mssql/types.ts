import sql from 'mssql';
import type { ColumnKind, Row } from '../../core/database.js';

/** SQL types a caller can force on a parameter when the JavaScript value alone is ambiguous. */
export type MssqlParamType =
  | 'uniqueidentifier'
  | 'nvarchar'
  | 'varbinary'
  | 'int'
  | 'bigint'
  | 'decimal'
  | 'datetime2';

/** A parameter with an explicit SQL type, e.g. `{ type: 'uniqueidentifier', value: id }`. */
export interface MssqlTypedParam {
  readonly type: MssqlParamType;
  readonly value: unknown;
  /** `decimal` only; default 38. */
  readonly precision?: number;
  /** `decimal` only; default: the number of decimals in `value`. */
  readonly scale?: number;
}

/** The slice of `mssql.Request` the adapter uses, so tests can inject a fake. */
export interface MssqlRequestLike {
  stream: boolean;
  input(name: string, type: sql.ISqlType, value: unknown): unknown;
  query(command: string): Promise<{ recordset?: (Row[] & { columns?: MssqlColumns }) | undefined }>;
  pause(): unknown;
  resume(): unknown;
  cancel(): unknown;
  // biome-ignore lint/suspicious/noExplicitAny: mirrors EventEmitter.on, whose listeners take driver-specific payloads
  on(event: string, listener: (...args: any[]) => void): unknown;
}

/** The slice of `mssql.Transaction` the adapter uses. */
export interface MssqlTransactionLike {
  begin(): Promise<unknown>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
  request(): MssqlRequestLike;
}

/** The slice of `mssql.ConnectionPool` the adapter uses; inject a fake one in tests. */
export interface MssqlPoolLike {
  request(): MssqlRequestLike;
  transaction(): MssqlTransactionLike;
  close(): Promise<void>;
}

/** Column metadata as the driver attaches it to a record set. */
export type MssqlColumns = Record<string, { type: unknown }>;

// Bounded lengths share one cached plan per type; anything longer needs MAX anyway.
const NVARCHAR_LENGTH = 4000;
const INT_MIN = -(2 ** 31);
const INT_MAX = 2 ** 31 - 1;

const PARAM_TYPES = new Set<string>([
  'uniqueidentifier',
  'nvarchar',
  'varbinary',
  'int',
  'bigint',
  'decimal',
  'datetime2',
]);

function isTypedParam(value: unknown): value is MssqlTypedParam {
  return (
    typeof value === 'object' &&
    value !== null &&
    !(value instanceof Date) &&
    !ArrayBuffer.isView(value) &&
    'value' in value &&
    'type' in value &&
    typeof value.type === 'string'
  );
}

function toBuffer(value: unknown): unknown {
  return value instanceof Uint8Array && !Buffer.isBuffer(value)
    ? Buffer.from(value.buffer, value.byteOffset, value.byteLength)
    : value;
}

function nvarchar(value: unknown): sql.ISqlType {
  return sql.NVarChar(
    typeof value === 'string' && value.length > NVARCHAR_LENGTH ? sql.MAX : NVARCHAR_LENGTH,
  );
}

function decimalsOf(value: unknown): number {
  const text = String(value);
  const dot = text.indexOf('.');
  return dot < 0 || /e/i.test(text) ? 0 : text.length - dot - 1;
}

function typed(param: MssqlTypedParam): [sql.ISqlType, unknown] {
  const { value } = param;
  switch (param.type) {
    case 'uniqueidentifier':
      return [sql.UniqueIdentifier(), value];
    case 'nvarchar':
      return [nvarchar(value), value];
    case 'varbinary':
      return [sql.VarBinary(sql.MAX), toBuffer(value)];
    case 'int':
      return [sql.Int(), value];
    case 'bigint':
      return [sql.BigInt(), value];
    case 'decimal':
      return [sql.Decimal(param.precision ?? 38, param.scale ?? decimalsOf(value)), value];
    case 'datetime2':
      return [sql.DateTime2(), value];
  }
}

/** Chooses the SQL type for one parameter value; throws TypeError for values SQL cannot take. */
export function sqlTypeOf(value: unknown): [sql.ISqlType, unknown] {
  if (value === null || value === undefined) return [sql.NVarChar(NVARCHAR_LENGTH), null];
  if (typeof value === 'string') return [nvarchar(value), value];
  if (typeof value === 'boolean') return [sql.Bit(), value];
  if (typeof value === 'bigint') return [sql.BigInt(), value];
  if (typeof value === 'number') {
    if (Number.isInteger(value) && value >= INT_MIN && value <= INT_MAX) return [sql.Int(), value];
    if (Number.isSafeInteger(value)) return [sql.BigInt(), value];
    // float(53) is the JavaScript number itself: no rounding on the way in.
    return [sql.Float(), value];
  }
  if (value instanceof Date) return [sql.DateTime2(), value];
  if (value instanceof Uint8Array) return [sql.VarBinary(sql.MAX), toBuffer(value)];
  if (isTypedParam(value)) {
    if (!PARAM_TYPES.has(value.type)) throw new TypeError(`Unsupported SQL parameter type: ${value.type}`);
    return typed(value);
  }
  throw new TypeError(`Unsupported SQL parameter value of type ${typeof value}`);
}

/** Binds `params` as `@p1..@pN` on `request`. */
export function bindParams(request: MssqlRequestLike, params: readonly unknown[]): void {
  params.forEach((param, index) => {
    const [type, value] = sqlTypeOf(param);
    request.input(`p${index + 1}`, type, value);
  });
}

/**
 * Returns a function that normalises driver rows in place: GUIDs upper-case, and `bigint` (a string
 * from tedious) as a number when it fits exactly. Everything else stays as the driver returns it.
 */
export function rowNormaliser(columns: MssqlColumns | undefined): (row: Row) => Row {
  const guids: string[] = [];
  const bigints: string[] = [];
  const times: string[] = [];
  for (const [name, column] of Object.entries(columns ?? {})) {
    if (column.type === sql.UniqueIdentifier) guids.push(name);
    else if (column.type === sql.BigInt) bigints.push(name);
    else if (column.type === sql.Time) times.push(name);
  }
  if (guids.length === 0 && bigints.length === 0 && times.length === 0) return (row) => row;
  return (row) => {
    for (const name of guids) {
      const value = row[name];
      if (typeof value === 'string') row[name] = value.toUpperCase();
    }
    for (const name of bigints) {
      const value = row[name];
      if (typeof value === 'string' && Number.isSafeInteger(Number(value))) row[name] = Number(value);
    }
    // The driver gives a time of day as a Date on 1970-01-01; as `hh:mm:ss` it reads the same as on
    // the embedded database wherever no column type is known (a Web API operation's rows).
    for (const name of times) {
      const value = row[name];
      if (value instanceof Date) row[name] = value.toISOString().slice(11, 19);
    }
    return row;
  };
}

const KINDS = new Map<string, ColumnKind>(
  Object.entries({
    int: 'int',
    bigint: 'int',
    smallint: 'int',
    tinyint: 'int',
    decimal: 'decimal',
    numeric: 'decimal',
    money: 'decimal',
    smallmoney: 'decimal',
    float: 'float',
    real: 'float',
    char: 'string',
    varchar: 'string',
    nchar: 'string',
    nvarchar: 'string',
    text: 'string',
    ntext: 'string',
    xml: 'string',
    datetime: 'datetime',
    datetime2: 'datetime',
    smalldatetime: 'datetime',
    datetimeoffset: 'datetime',
    date: 'date',
    time: 'time',
    uniqueidentifier: 'guid',
    binary: 'binary',
    varbinary: 'binary',
    image: 'binary',
    timestamp: 'binary',
    rowversion: 'binary',
    bit: 'bool',
  } satisfies Record<string, ColumnKind>),
);

/** Maps a SQL Server type name to its {@link ColumnKind}. */
export function columnKind(dataType: string): ColumnKind {
  return KINDS.get(dataType.toLowerCase()) ?? 'other';
}
