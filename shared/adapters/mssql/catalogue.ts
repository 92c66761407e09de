import type { ColumnInfo, Database, DataSourceInfo, Row } from '../../core/database.js';
import { columnKind } from './types.js';

/**
 * One round trip: the first matching table or view (`@p1` name, `@p2` schema or NULL) joined to its
 * columns and primary-key positions. LOWER() on both sides keeps the lookup case-insensitive even
 * under a case-sensitive database collation. Without a schema, `dbo` wins, then the caller's
 * default schema, then the alphabetically first.
 */
export const FIND_DATA_SOURCE_SQL = `
WITH target AS (
  SELECT TOP (1) o.object_id, s.name AS schema_name, o.name AS object_name, RTRIM(o.type) AS object_type
  FROM sys.objects AS o
  JOIN sys.schemas AS s ON s.schema_id = o.schema_id
  WHERE o.type IN ('U', 'V')
    AND LOWER(o.name) = LOWER(@p1)
    AND (@p2 IS NULL OR LOWER(s.name) = LOWER(@p2))
  ORDER BY CASE WHEN s.name = N'dbo' THEN 0 WHEN s.name = SCHEMA_NAME() THEN 1 ELSE 2 END, s.name
)
SELECT target.schema_name AS schemaName, target.object_name AS objectName, target.object_type AS objectType,
  c.name AS columnName, COALESCE(base.name, t.name) AS dataType, ic.key_ordinal AS keyOrdinal
FROM target
JOIN sys.columns AS c ON c.object_id = target.object_id
JOIN sys.types AS t ON t.user_type_id = c.user_type_id
-- alias types report their base type, as INFORMATION_SCHEMA does
LEFT JOIN sys.types AS base ON t.is_user_defined = 1 AND base.user_type_id = t.system_type_id
LEFT JOIN sys.indexes AS i ON i.object_id = c.object_id AND i.is_primary_key = 1
LEFT JOIN sys.index_columns AS ic
  ON ic.object_id = i.object_id AND ic.index_id = i.index_id AND ic.column_id = c.column_id AND ic.key_ordinal > 0
ORDER BY c.column_id`;

/** Looks a table or view up in the SQL Server catalogue; undefined when absent. */
export async function findMssqlDataSource(
  query: Database['query'],
  schema: string | undefined,
  name: string,
): Promise<DataSourceInfo | undefined> {
  const rows = await query(FIND_DATA_SOURCE_SQL, [name, schema ?? null]);
  const first = rows[0];
  if (!first) return undefined;
  const columns: ColumnInfo[] = rows.map((row, index) => ({
    name: String(row.columnName),
    kind: columnKind(String(row.dataType)),
    dataType: String(row.dataType),
    ordinal: index + 1,
  }));
  const primaryKey = rows
    .filter((row): row is Row & { keyOrdinal: number } => typeof row.keyOrdinal === 'number')
    .sort((a, b) => a.keyOrdinal - b.keyOrdinal)
    .map((row) => String(row.columnName));
  return {
    schema: String(first.schemaName),
    name: String(first.objectName),
    kind: first.objectType === 'V' ? 'view' : 'table',
    columns,
    primaryKey,
  };
}
