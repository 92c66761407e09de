import { inject } from 'vitest';

export { runMssqlScripts, scriptBatches } from '../../infra/local/mssql-scripts.js';

/**
 * The SQL Server of the integration suites: MSSQL_URL, else the T-SQL engine that the test:tsql
 * run started (tests/tsql-global-setup.ts). `npm test` without MSSQL_URL skips those suites;
 * `npm run test:tsql` always has one.
 */
export const mssqlUrl: string | undefined = process.env.MSSQL_URL || inject('tsqlUrl') || undefined;
