import type { ColumnInfo, DataSourceInfo } from '../database.js';
import { badRequest } from '../errors.js';

/**
 * A tenant's hidden columns (registry `hiddenColumns`): data source (`NAME` or `schema.NAME`) to
 * column names, all compared case-insensitively.
 */
export type HiddenColumns = Readonly<Record<string, readonly string[]>>;

/**
 * The data source as the tenant may see it: its hidden columns gone, as if the table had none of
 * them, so that nothing downstream (records, `columns=`, conditions, the description) can name
 * them. A primary key with a hidden column no longer orders the reads: the order would be by
 * values the caller must not see, and a continuation cursor would carry them; the source is then
 * ordered as one without a key (its visible columns).
 */
export function visibleDataSource(source: DataSourceInfo, hidden: HiddenColumns | undefined): DataSourceInfo {
  if (!hidden) return source;
  const names = hiddenNames(source, hidden);
  if (names.size === 0) return source;
  const columns = source.columns.filter((c) => !names.has(c.name.toLowerCase()));
  const keyHidden = source.primaryKey.some((k) => names.has(k.toLowerCase()));
  return { ...source, columns, primaryKey: keyHidden ? [] : source.primaryKey };
}

function hiddenNames(source: DataSourceInfo, hidden: HiddenColumns): Set<string> {
  const bare = source.name.toLowerCase();
  const qualified = `${source.schema}.${source.name}`.toLowerCase();
  const names = new Set<string>();
  for (const [key, columns] of Object.entries(hidden)) {
    const entry = key.toLowerCase();
    if (entry !== bare && entry !== qualified) continue;
    for (const column of columns) names.add(column.toLowerCase());
  }
  return names;
}

/**
 * `columns=A,B,…`: the source with only those columns selected, in the order given, each spelled
 * as in the catalogue (bare or `[..]`, case-insensitive). The rows and their order stay those of
 * the whole source. Undefined (no parameter): all columns.
 */
export function chooseColumns(source: DataSourceInfo, raw: string | undefined): DataSourceInfo {
  if (raw === undefined) return source;
  const byName = new Map(source.columns.map((c) => [c.name.toLowerCase(), c]));
  const selected: ColumnInfo[] = [];
  const seen = new Set<string>();
  const items = raw.split(',');
  for (const [index, item] of items.entries()) {
    const trimmed = item.trim();
    const name = /^\[[^\]]*\]$/.test(trimmed) ? trimmed.slice(1, -1) : trimmed;
    if (name === '') {
      throw badRequest(
        'invalid_columns',
        `The query parameter "columns" has an empty item (item ${index + 1} of ${items.length}): give column names separated by commas`,
      );
    }
    const shown = JSON.stringify(name.slice(0, 128));
    const column = byName.get(name.toLowerCase());
    // A hidden column is not in `source` (see visibleDataSource): the same answer as an unknown one.
    if (!column) {
      throw badRequest('invalid_columns', `Column ${shown} does not exist in this table or view`);
    }
    if (seen.has(column.name)) {
      throw badRequest('invalid_columns', `Column ${shown} is given twice in "columns"`);
    }
    seen.add(column.name);
    selected.push(column);
  }
  return { ...source, selected };
}
