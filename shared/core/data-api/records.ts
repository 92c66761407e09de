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
  }));
  return (row) => {
    let text = '';
    for (const field of fields) {
      const value = row[field.name];
      if (value === null || value === undefined) continue;
      text += (text === '' ? '{' : ',') + field.key + field.encode(value);
    }
    return text === '' ? '{}' : `${text}}`;
  };
}

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
    default:
      return (value) => JSON.stringify(encodeValue(value, column));
  }
}

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
