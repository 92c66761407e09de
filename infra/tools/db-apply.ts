import { createMssqlDatabase } from '../../shared/adapters/mssql/index.js';
import { forScripts, mssqlScriptFiles, runMssqlScripts } from '../local/mssql-scripts.js';

// Usage: npm run db:apply -- '<connection string>'
// Runs infra/sql/mssql/*.sql (tables, procedures, demo operations and data; idempotent) on the
// database the connection string names, as a DBA does on each tenant database. The connection
// string is never printed: it holds a password.
const connectionString = process.argv[2] ?? process.env.DB_APPLY_URL;
if (!connectionString || process.argv.length > 3) {
  console.error("usage: npm run db:apply -- '<connection string>'   (or DB_APPLY_URL in the environment)");
  process.exit(2);
}
const started = Date.now();
const db = createMssqlDatabase({ connectionString: forScripts(connectionString) });
try {
  await runMssqlScripts(db);
  console.log(`applied ${mssqlScriptFiles().join(', ')} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
} catch (error) {
  // The driver's message names the statement that failed, never the password.
  console.error(`db:apply failed: ${(error as Error).message}`);
  process.exitCode = 1;
} finally {
  await db.close();
}
