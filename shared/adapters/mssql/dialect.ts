import type { SqlDialect } from '../../core/database.js';

/** T-SQL: `[name]`, `@p1`, `OFFSET … FETCH`. */
export const mssqlDialect: SqlDialect = Object.freeze({
  name: 'mssql',
  quoteIdent: (name: string) => `[${name.replaceAll(']', ']]')}]`,
  param: (index: number) => `@p${index}`,
  paginate: (offset: string, fetch: string) => `OFFSET ${offset} ROWS FETCH NEXT ${fetch} ROWS ONLY`,
});

/**
 * The number under which the T-SQL engine of the development machines (Babelfish) passes a
 * PostgreSQL error through untranslated. SQL Server itself never sends it (it lies among the user
 * message numbers, from 50000).
 */
export const BABELFISH_UNTRANSLATED = 33557097;
