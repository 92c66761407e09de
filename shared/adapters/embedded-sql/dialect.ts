import type { SqlDialect } from '../../core/database.js';

/** PostgreSQL (the embedded database): `"name"`, `$1`, `OFFSET … FETCH`. */
export const postgresDialect: SqlDialect = Object.freeze({
  name: 'postgres',
  quoteIdent: (name: string) => `"${name.replaceAll('"', '""')}"`,
  param: (index: number) => `$${index}`,
  paginate: (offset: string, fetch: string) => `OFFSET ${offset} ROWS FETCH NEXT ${fetch} ROWS ONLY`,
});
