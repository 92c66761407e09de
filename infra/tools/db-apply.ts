import { parseArgs } from 'node:util';
import { createMssqlDatabase } from '../../shared/adapters/mssql/index.js';
import { applyServiceRole, ServiceRoleError } from '../../shared/adapters/mssql/service-role.js';
import { parseQualifiedName } from '../../shared/core/sql-names.js';
import { forScripts, mssqlScriptFiles, runMssqlScripts } from '../local/mssql-scripts.js';

// Usage: npm run db:apply -- '<connection string>' [--change-feed TABLE,…]
//          [--role NAME [--read TABLE,…] [--execute PROCEDURE,…] [--login NAME]]
// Runs infra/sql/mssql/*.sql (tables, procedures, demo operations and data; idempotent) on the
// database the connection string names, as a DBA does on each tenant database; with
// --change-feed, also turns recording on for those tables (dbo.SVC_CHANGE_FEED_ENABLE: a change
// table and a trigger each; idempotent); with --role, creates the database role of the service's
// login with exactly the grants docs/sql-server.md ("Permissions") lists, and with --login a
// login and user in it (password from DB_LOGIN_PASSWORD, never a command-line argument). The
// connection string and the password are never printed.
const USAGE = `usage: npm run db:apply -- '<connection string>' [--change-feed TABLE[,schema.TABLE…]]
         [--role NAME [--read TABLE,VIEW…] [--execute PROCEDURE,…] [--login NAME]]
  (or DB_APPLY_URL in the environment; the login's password in DB_LOGIN_PASSWORD)`;

const list = (value: string | undefined) =>
  value === undefined
    ? []
    : value
        .split(',')
        .map((name) => name.trim())
        .filter(Boolean);

function usage(problem?: string): never {
  console.error(USAGE);
  if (problem) console.error(problem);
  process.exit(2);
}

let parsed: ReturnType<typeof parse>;
const parse = () =>
  parseArgs({
    allowPositionals: true,
    options: {
      'change-feed': { type: 'string' },
      role: { type: 'string' },
      read: { type: 'string' },
      execute: { type: 'string' },
      login: { type: 'string' },
    },
  });
try {
  parsed = parse();
} catch (error) {
  usage((error as Error).message);
}
const { values, positionals } = parsed;
const connectionString = positionals[0] ?? process.env.DB_APPLY_URL;
if (!connectionString || positionals.length > 1) usage();
const changeFeed = values['change-feed'];
const names = changeFeed === undefined ? undefined : list(changeFeed).map((name) => parseQualifiedName(name));
if (changeFeed !== undefined && (!names?.length || names.some((n) => !n))) {
  usage('--change-feed takes table names (NAME or schema.NAME) separated by commas');
}
if (!values.role && (values.read || values.execute || values.login)) {
  usage('--read, --execute and --login go with --role NAME');
}
const password = process.env.DB_LOGIN_PASSWORD;
if (values.login && !password) usage("--login needs the new login's password in DB_LOGIN_PASSWORD");

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
  if (values.role) {
    const given = await applyServiceRole(db, {
      role: values.role,
      read: list(values.read),
      execute: list(values.execute),
      ...(values.login ? { login: { name: values.login, password: password! } } : {}),
    });
    for (const grant of given)
      console.log(`role ${values.role}: ${grant.permissions.join(', ')} on ${grant.object}`);
    if (values.login) console.log(`login and user ${values.login}: member of ${values.role}`);
  }
} catch (error) {
  // The driver's message names the statement that failed, never the password.
  console.error(
    error instanceof ServiceRoleError
      ? `db:apply: ${error.message}`
      : `db:apply failed: ${(error as Error).message}`,
  );
  process.exitCode = 1;
} finally {
  await db.close();
}
