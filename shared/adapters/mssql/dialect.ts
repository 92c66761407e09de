import type { SqlDialect } from '../../core/database.js';

/** T-SQL: `[name]`, `@p1`, `OFFSET … FETCH`. */
export const mssqlDialect: SqlDialect = Object.freeze({
  name: 'mssql',
  quoteIdent: (name: string) => `[${name.replaceAll(']', ']]')}]`,
  param: (index: number) => `@p${index}`,
  paginate: (offset: string, fetch: string) => `OFFSET ${offset} ROWS FETCH NEXT ${fetch} ROWS ONLY`,
});
