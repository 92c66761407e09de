import { inject } from 'vitest';
import type { Database } from '../../shared/core/database.js';

export { runMssqlScripts, scriptBatches } from '../../infra/tools/mssql-scripts.js';

/**
 * The SQL Server of the integration suites: MSSQL_URL, else the T-SQL engine that the test:tsql
 * run started (tests/tsql-global-setup.ts). `npm test` without MSSQL_URL skips those suites;
 * `npm run test:tsql` always has one.
 */
export const mssqlUrl: string | undefined = process.env.MSSQL_URL || inject('tsqlUrl') || undefined;

/**
 * Whether `db` is Babelfish (the T-SQL engine of test:tsql) rather than SQL Server: where the two
 * differ (docs/sql-server.md, "Verified where"), a test checks SQL Server's behaviour on SQL Server only.
 */
export async function isBabelfish(db: Pick<Database, 'query'>): Promise<boolean> {
  const [row] = await db.query(`SELECT SERVERPROPERTY('babelfish') AS babelfish`);
  return row?.babelfish != null;
}
