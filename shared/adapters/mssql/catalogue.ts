import type { ColumnInfo, Database, DataSourceInfo, DataSourceName, Row } from '../../core/database.js';
import { columnKind } from './types.js';

/**
 * The first characters of a view's definition, where its name is written as declared: Babelfish
 * answers a view's name in lower case everywhere in its catalogue (SQL Server keeps the case).
 */
const VIEW_DEFINITION_HEAD = (type: string, schema: string, name: string) =>
  `CASE WHEN ${type} = 'VIEW' THEN LEFT(OBJECT_DEFINITION(OBJECT_ID(QUOTENAME(${schema}) + N'.' + QUOTENAME(${name}))), 400) END`;

/**
 * A view's name as its definition declares it (`CREATE VIEW dbo.V_DOKUMENT_SOUBOR`), where the
 * catalogue answers the same name in another case; else the catalogue's name.
 */
export function declaredViewName(catalogueName: string, definition: unknown): string {
  if (typeof definition !== 'string') return catalogueName;
  const match =
    /^\s*CREATE\s+(?:OR\s+ALTER\s+)?VIEW\s+(?:(?:\[[^\]]+\]|"[^"]+"|\w+)\s*\.\s*)?(?:\[([^\]]+)\]|"([^"]+)"|(\w+))/i.exec(
      definition.replace(/^(\s*--[^\n]*\n|\s*\/\*[\s\S]*?\*\/)*/, ''),
    );
  const declared = match?.[1] ?? match?.[2] ?? match?.[3];
  return declared && declared.toLowerCase() === catalogueName.toLowerCase() ? declared : catalogueName;
}

/**
 * One round trip: the first matching table or view (`@p1` name, `@p2` schema or NULL) joined to its
 * columns and primary-key positions. LOWER() on both sides keeps the lookup case-insensitive even
 * under a case-sensitive database collation. Without a schema, `dbo` wins, then the caller's
 * default schema, then the alphabetically first. INFORMATION_SCHEMA rather than sys.*: it keeps
 * the names as declared on Babelfish too, whose sys views lower-case them (docs/sql-server.md, "Verified where");
 * alias types report their base type there.
 */
export const FIND_DATA_SOURCE_SQL = `
WITH target AS (
  SELECT TOP (1) t.TABLE_SCHEMA AS schema_name, t.TABLE_NAME AS object_name, t.TABLE_TYPE AS table_type
  FROM INFORMATION_SCHEMA.TABLES AS t
  WHERE t.TABLE_TYPE IN ('BASE TABLE', 'VIEW')
    AND LOWER(t.TABLE_NAME) = LOWER(@p1)
    AND (@p2 IS NULL OR LOWER(t.TABLE_SCHEMA) = LOWER(@p2))
  ORDER BY CASE WHEN t.TABLE_SCHEMA = N'dbo' THEN 0 WHEN t.TABLE_SCHEMA = SCHEMA_NAME() THEN 1 ELSE 2 END,
    t.TABLE_SCHEMA
)
SELECT target.schema_name AS schemaName, target.object_name AS objectName,
  CASE WHEN target.table_type = 'VIEW' THEN 'V' ELSE 'U' END AS objectType,
  ${VIEW_DEFINITION_HEAD('target.table_type', 'target.schema_name', 'target.object_name')} AS viewDefinition,
  c.COLUMN_NAME AS columnName, c.DATA_TYPE AS dataType, c.IS_NULLABLE AS isNullable,
  k.ORDINAL_POSITION AS keyOrdinal
FROM target
JOIN INFORMATION_SCHEMA.COLUMNS AS c
  ON c.TABLE_SCHEMA = target.schema_name AND c.TABLE_NAME = target.object_name
LEFT JOIN INFORMATION_SCHEMA.TABLE_CONSTRAINTS AS pk
  ON pk.TABLE_SCHEMA = target.schema_name AND pk.TABLE_NAME = target.object_name
  AND pk.CONSTRAINT_TYPE = 'PRIMARY KEY'
LEFT JOIN INFORMATION_SCHEMA.KEY_COLUMN_USAGE AS k
  ON k.CONSTRAINT_SCHEMA = pk.CONSTRAINT_SCHEMA AND k.CONSTRAINT_NAME = pk.CONSTRAINT_NAME
  AND k.TABLE_SCHEMA = target.schema_name AND k.TABLE_NAME = target.object_name AND k.COLUMN_NAME = c.COLUMN_NAME
ORDER BY c.ORDINAL_POSITION`;

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
    nullable: String(row.isNullable).toUpperCase() === 'YES',
  }));
  const primaryKey = rows
    .filter((row): row is Row & { keyOrdinal: number } => typeof row.keyOrdinal === 'number')
    .sort((a, b) => a.keyOrdinal - b.keyOrdinal)
    .map((row) => String(row.columnName));
  return {
    schema: String(first.schemaName),
    name: declaredViewName(String(first.objectName), first.viewDefinition),
    kind: first.objectType === 'V' ? 'view' : 'table',
    columns,
    primaryKey,
  };
}

/** Every table and view outside the system schemas, by schema and name. */
export const LIST_DATA_SOURCES_SQL = `
SELECT t.TABLE_SCHEMA AS schemaName, t.TABLE_NAME AS objectName,
  ${VIEW_DEFINITION_HEAD('t.TABLE_TYPE', 't.TABLE_SCHEMA', 't.TABLE_NAME')} AS viewDefinition
FROM INFORMATION_SCHEMA.TABLES AS t
WHERE t.TABLE_TYPE IN ('BASE TABLE', 'VIEW') AND t.TABLE_SCHEMA NOT IN (N'sys', N'INFORMATION_SCHEMA')
ORDER BY t.TABLE_SCHEMA, t.TABLE_NAME`;

/** Lists the tables and views of a SQL Server database. */
export async function listMssqlDataSources(query: Database['query']): Promise<DataSourceName[]> {
  const rows = await query(LIST_DATA_SOURCES_SQL);
  return rows.map((row) => ({
    schema: String(row.schemaName),
    name: declaredViewName(String(row.objectName), row.viewDefinition),
  }));
}
