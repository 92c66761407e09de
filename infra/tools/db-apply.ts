import { createMssqlDatabase } from '../../shared/adapters/mssql/index.js';
import { parseQualifiedName } from '../../shared/core/sql-names.js';
import { forScripts, mssqlScriptFiles, runMssqlScripts } from '../local/mssql-scripts.js';

// Usage: npm run db:apply -- '<connection string>' [--change-feed TABLE[,schema.TABLE…]]
// Runs infra/sql/mssql/*.sql (tables, procedures, demo operations and data; idempotent) on the
// database the connection string names, as a DBA does on each tenant database; with
// --change-feed, also turns recording on for those tables (dbo.SVC_CHANGE_FEED_ENABLE: a change
// table and a trigger each; idempotent). The connection string is never printed: it holds a password.
const USAGE =
  "usage: npm run db:apply -- '<connection string>' [--change-feed TABLE[,schema.TABLE…]]   (or DB_APPLY_URL in the environment)";
const args = process.argv.slice(2);
const flag = args.indexOf('--change-feed');
const changeFeed = flag >= 0 ? (args.splice(flag, 2)[1] ?? '') : undefined;
const connectionString = args[0] ?? process.env.DB_APPLY_URL;
const tables = changeFeed?.split(',').map((name) => name.trim());
const names = tables?.map((name) => parseQualifiedName(name));
if (
  !connectionString ||
  args.length > 1 ||
  (changeFeed !== undefined && (!names?.length || names.some((n) => !n)))
) {
  console.error(USAGE);
  if (changeFeed !== undefined)
    console.error('--change-feed takes table names (NAME or schema.NAME) separated by commas');
  process.exit(2);
}
const started = Date.now();
const db = createMssqlDatabase({ connectionString: forScripts(connectionString) });
try {
  await runMssqlScripts(db);
  console.log(`applied ${mssqlScriptFiles().join(', ')} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  for (const name of names ?? []) {
    // Names go as parameters; the procedure checks them against the catalogue.
    await db.query('EXEC dbo.SVC_CHANGE_FEED_ENABLE @p1, @p2', [name!.schema ?? 'dbo', name!.name]);
    console.log(`change feed: recording ${name!.schema ?? 'dbo'}.${name!.name}`);
  }
} catch (error) {
  // The driver's message names the statement that failed, never the password.
  console.error(`db:apply failed: ${(error as Error).message}`);
  process.exitCode = 1;
} finally {
  await db.close();
}
