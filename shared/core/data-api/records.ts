import type { ColumnInfo, Row } from '../database.js';

/** Turns a database row into the Data API's flat record: NULLs left out, values JSON-ready. */
export function encodeRecord(row: Row, columns: readonly ColumnInfo[]): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (const column of columns) {
    const value = row[column.name];
    if (value === null || value === undefined) continue;
    record[column.name] = encodeValue(value, column);
  }
  return record;
}

/**
 * The JSON text of {@link encodeRecord} for rows of these columns, written directly: the same
 * bytes as `JSON.stringify(encodeRecord(row, columns))`, without building the record first (a
 * large answer is hundreds of thousands of rows).
 */
export function recordEncoder(columns: readonly ColumnInfo[]): (row: Row) => string {
  // A JavaScript object puts keys like "0" or "2024" first, whatever their column's place; such
  // rare tables keep the object's order, so that the answer stays as it always was.
  if (columns.some((column) => ARRAY_INDEX.test(column.name))) {
    return (row) => JSON.stringify(encodeRecord(row, columns));
  }
  const fields = columns.map((column) => ({
    name: column.name,
    key: `${JSON.stringify(column.name)}:`,
    encode: valueEncoder(column),
    inline: INLINE[column.kind],
  }));
  return compiledEncoder(fields);
}

/**
 * The encoder as one function compiled for these columns: each column read by a constant name
 * (a property load the engine caches per call site, where `row[field.name]` in a loop over the
 * columns is a lookup by a varying key) and numbers written inline. A page of 1,000 records of 18
 * columns is 18,000 such reads, most of the service's own time on a read (profiled: docs/development.md, "Reads of issue 20"). Names
 * enter the code only as JSON string literals, which are valid JavaScript string literals.
 */
function compiledEncoder(
  fields: readonly {
    name: string;
    key: string;
    encode: (value: unknown) => string;
    inline: ((encode: string) => string) | undefined;
  }[],
) {
  const lines = fields.map((field, index) => {
    const name = JSON.stringify(field.name);
    const first = JSON.stringify(`{${field.key}`);
    const next = JSON.stringify(`,${field.key}`);
    const value = field.inline ? field.inline(`e[${index}]`) : `e[${index}](v)`;
    return `v = row[${name}]; if (v !== null && v !== undefined) t += (t === '' ? ${first} : ${next}) + ${value};`;
  });
  const source = `return function encodeRecordText(row) { let t = ''; let v; ${lines.join(' ')} return t === '' ? '{}' : t + '}'; };`;
  return new Function('e', source)(fields.map((field) => field.encode)) as (row: Row) => string;
}

/**
 * The commonest values written inline, each falling back to its column's encoder (`encode`) for
 * anything else: a finite number as its shortest text (what JSON.stringify and String write), a
 * string as JSON.stringify writes it.
 */
const NUMBER_INLINE = (encode: string) =>
  `(typeof v === 'number' && Number.isFinite(v) ? '' + v : ${encode}(v))`;
const INLINE: Partial<Record<ColumnInfo['kind'], (encode: string) => string>> = {
  int: NUMBER_INLINE,
  decimal: NUMBER_INLINE,
  float: NUMBER_INLINE,
  string: (encode) => `(typeof v === 'string' ? JSON.stringify(v) : ${encode}(v))`,
};

const ARRAY_INDEX = /^(0|[1-9]\d{0,9})$/;

function valueEncoder(column: ColumnInfo): (value: unknown) => string {
  switch (column.kind) {
    case 'int':
    case 'decimal':
    case 'float':
      return (value) => {
        const number = typeof value === 'number' ? value : Number(value);
        // What JSON.stringify writes for a number: its shortest text, null when not finite.
        return Number.isFinite(number) ? String(number) : 'null';
      };
    case 'string':
      return (value) => JSON.stringify(String(value));
    case 'datetime':
    case 'date':
      // The embedded database's adapter gives date-times as the answer's text already, SQL Server's
      // as Dates: written quoted as they are (digits, '-', ':' and 'T' need no escape), without the
      // general path's calls per value (a page of 1,000 records has thousands of them).
      return (value) => {
        if (typeof value === 'string' && WALL_CLOCK.test(value)) return `"${value}"`;
        if (value instanceof Date) {
          const text = quotedWallClock(value);
          if (text !== undefined) return text;
        }
        return JSON.stringify(encodeValue(value, column));
      };
    case 'guid':
      return (value) =>
        typeof value === 'string' && UPPER_GUID.test(value)
          ? `"${value}"`
          : JSON.stringify(encodeValue(value, column));
    default:
      return (value) => JSON.stringify(encodeValue(value, column));
  }
}

const WALL_CLOCK = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/;
const TWO_DIGITS = Array.from({ length: 60 }, (_, n) => String(n).padStart(2, '0'));

/**
 * `"YYYY-MM-DDThh:mm:ss"` of a Date in years 1000–9999 (the same text as the first 19 characters of
 * its `toISOString()`), from its UTC fields; undefined for any other Date. SQL Server's driver gives
 * every date-time as a Date, four of them a record in DOKUMENT: written from the fields they take
 * a third of the time `toISOString` and a slice do (measured in docs/development.md).
 */
function quotedWallClock(date: Date): string | undefined {
  const year = date.getUTCFullYear();
  if (!(year >= 1000 && year <= 9999)) return undefined;
  return (
    `"${year}-${TWO_DIGITS[date.getUTCMonth() + 1]}-${TWO_DIGITS[date.getUTCDate()]}` +
    `T${TWO_DIGITS[date.getUTCHours()]}:${TWO_DIGITS[date.getUTCMinutes()]}:${TWO_DIGITS[date.getUTCSeconds()]}"`
  );
}
const UPPER_GUID = /^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$/;

function encodeValue(value: unknown, column: ColumnInfo): unknown {
  switch (column.kind) {
    case 'int':
    case 'decimal':
    case 'float':
      return typeof value === 'number' ? value : Number(value);
    case 'datetime':
      return formatDateTime(value);
    case 'date':
      return value instanceof Date ? formatDateTime(value) : `${String(value).slice(0, 10)}T00:00:00`;
    case 'time':
      return value instanceof Date ? value.toISOString().slice(11, 19) : String(value).slice(0, 8);
    case 'guid':
      return String(value).toUpperCase();
    case 'binary':
      return Buffer.from(value as Uint8Array).toString('base64');
    case 'bool':
      return value === true || value === 1 || value === '1' || value === 't' ? 1 : 0;
    case 'string':
      return String(value);
    default:
      return typeof value === 'object' ? JSON.stringify(value) : value;
  }
}

/** `YYYY-MM-DDThh:mm:ss`, no zone, no fraction. Drivers give wall-clock time as UTC Dates or text. */
function formatDateTime(value: unknown): string {
  if (value instanceof Date) return value.toISOString().slice(0, 19);
  const text = String(value);
  return `${text.slice(0, 10)}T${text.slice(11, 19) || '00:00:00'}`;
}
