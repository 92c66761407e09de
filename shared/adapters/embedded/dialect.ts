import type { SqlDialect } from '../../core/database.js';

/** PostgreSQL (the embedded database): `"name"`, `$1`, `OFFSET … FETCH`. */
export const embeddedDialect: SqlDialect = Object.freeze({
  name: 'embedded',
  quoteIdent: (name: string) => `"${name.replaceAll('"', '""')}"`,
  param: (index: number) => `$${index}`,
  paginate: (offset: string, fetch: string) => `OFFSET ${offset} ROWS FETCH NEXT ${fetch} ROWS ONLY`,
});
