/** One SQL identifier as the service accepts it: ASCII letters, digits and `_`, at most 128 characters. */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

export interface QualifiedName {
  /** Undefined when the name was not qualified. */
  readonly schema: string | undefined;
  readonly name: string;
}

/** Splits `NAME` or `schema.NAME`; undefined when either part is not an identifier. */
export function parseQualifiedName(text: string): QualifiedName | undefined {
  const parts = text.split('.');
  if (parts.length > 2 || !parts.every((part) => IDENTIFIER.test(part))) return undefined;
  return parts.length === 2 ? { schema: parts[0], name: parts[1]! } : { schema: undefined, name: parts[0]! };
}

/** How long an identifier may be: SQL Server's `sysname` (128 characters), PostgreSQL's 63 bytes. */
export const IDENTIFIER_LIMITS = {
  mssql: { length: 128, unit: 'characters', database: 'SQL Server' },
  embedded: { length: 63, unit: 'bytes', database: 'the embedded database (PostgreSQL)' },
} as const;

/**
 * The names the change feed derives from a recorded table's (CONTRACT 4b; infra/sql/*\/050-change-feed.sql):
 * its change table, that table's key and index, its trigger (SQL Server) or triggers and trigger
 * function (PostgreSQL). The longest, the index, is what bounds the table's name.
 */
export const changeFeedNames = (table: string) => ({
  changeTable: `SVC_CHANGES_${table}`,
  longest: `IX_SVC_CHANGES_${table}_BATCH`,
});

/** What a recorded table's name may measure: the longest derived name within the dialect's limit. */
export function changeFeedTableLimit(dialect: keyof typeof IDENTIFIER_LIMITS): number {
  return IDENTIFIER_LIMITS[dialect].length - changeFeedNames('').longest.length;
}

/**
 * Why the change feed cannot record a table of this (bare) name in `dialect`, or undefined: a name
 * derived from it would pass the dialect's identifier limit, where SQL Server would cut it (or make
 * it NULL) and PostgreSQL would cut it, so that two tables' objects could share a name. Refused
 * rather than made to fit: every derived name stays what the docs say it is.
 */
export function changeFeedNameProblem(
  table: string,
  dialect: keyof typeof IDENTIFIER_LIMITS,
): string | undefined {
  const limit = IDENTIFIER_LIMITS[dialect];
  const size = (text: string) => (dialect === 'embedded' ? Buffer.byteLength(text, 'utf8') : text.length);
  if (size(changeFeedNames(table).longest) <= limit.length) return undefined;
  return (
    `the change feed cannot record table ${table}: its name has ${size(table)} ${limit.unit}, and the names derived ` +
    `from it (the longest, IX_SVC_CHANGES_<table>_BATCH, ${size(changeFeedNames('').longest)} more) would pass ` +
    `${limit.database}'s limit of ${limit.length} ${limit.unit}: a recorded table's name may have at most ` +
    `${changeFeedTableLimit(dialect)} ${limit.unit}`
  );
}
