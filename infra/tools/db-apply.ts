import { parseArgs } from 'node:util';
import { createMssqlDatabase } from '../../shared/adapters/mssql/index.js';
import { reservedPrincipal, ServiceRoleError } from '../../shared/adapters/mssql/service-role.js';
import { parseQualifiedName } from '../../shared/core/sql-names.js';
import { forScripts } from './mssql-scripts.js';
import { APPLY_LOCK_WAIT_SECONDS, applyToTenantDatabase, TenantDatabaseError } from './tenant-database.js';

// Usage: npm run db:apply -- '<connection string>' [--plan] [--demo] [--schema] [--erp-applications]
//          [--wait SECONDS] [--change-feed TABLE,…] [--role NAME [--read TABLE,…] [--execute PROCEDURE,…] [--login NAME]]
// On a tenant's database (the ERP's), each part only when asked (docs/operations.md, "First
// deployment"): without --role and --change-feed (or with --schema), the service's own objects
// (infra/sql/mssql/service/*.sql: idempotent, never touching an object the ERP owns), after a check
// of what the service needs of the ERP's objects that stops, naming each, before anything is
// written; --demo adds the demo ERP, its data, procedures and operations where missing (never
// without it); --change-feed turns recording on for those tables (dbo.SVC_CHANGE_FEED_ENABLE);
// --role creates the database role of the service's login with exactly the grants
// docs/sql-server.md ("Permissions") lists, and with --login a login and user in it (password from
// DB_LOGIN_PASSWORD, never a command-line argument). --plan prints every statement and grant it
// would run, in order, and changes nothing. --erp-applications: a tenant on this database reads its
// Web API applications from the ERP's register (dbo.WS_APPLICATION) instead of the registry; its
// layout is checked, and --role grants SELECT on it. A run holds the database's application lock
// throughout: a second run at once waits for it (--wait, default 600 s), then stops saying so.
// The connection string and the password are never printed.
const USAGE = `usage: npm run db:apply -- '<connection string>' [--plan] [--demo] [--schema] [--documents-elsewhere]
         [--erp-applications] [--wait SECONDS] [--change-feed TABLE[,schema.TABLE…]]
         [--role NAME [--read TABLE,VIEW…] [--execute PROCEDURE,…] [--login NAME]]
  without --role and --change-feed (or with --schema): the service's objects, after a check of the ERP's
  --plan   print every statement it would run, change nothing
  --demo   also the demo ERP, data and operations where missing (a demo database only)
  --documents-elsewhere   SVCDOC lives in a document database of its own (not checked here)
  --erp-applications      a tenant reads its Web API applications from the ERP's dbo.WS_APPLICATION
                          (registry: "applications": {"erpTable": "dbo.WS_APPLICATION"}): checked, and granted with --role
  --wait SECONDS          how long to wait for another db:apply on this database (default ${APPLY_LOCK_WAIT_SECONDS})
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
      plan: { type: 'boolean' },
      demo: { type: 'boolean' },
      schema: { type: 'boolean' },
      'documents-elsewhere': { type: 'boolean' },
      'erp-applications': { type: 'boolean' },
      wait: { type: 'string' },
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
const names = changeFeed === undefined ? [] : list(changeFeed).map((name) => parseQualifiedName(name));
if (changeFeed !== undefined && (!names.length || names.some((n) => !n))) {
  usage('--change-feed takes table names (NAME or schema.NAME) separated by commas');
}
const role = values.role;
if (role !== undefined && role.trim() === '')
  usage('--role takes the name of the role to create (it was empty)');
if (
  role === undefined &&
  (values.read !== undefined || values.execute !== undefined || values.login !== undefined)
) {
  usage('--read, --execute and --login go with --role NAME');
}
if (values.login !== undefined && values.login.trim() === '')
  usage('--login takes the name of the login to create (it was empty)');
for (const [what, name] of [
  ['--role', role],
  ['--login', values.login],
] as const) {
  const reserved = name === undefined ? undefined : reservedPrincipal(name);
  if (reserved)
    usage(`${what} ${name} is refused: ${reserved}; the service's grants must go to a role of its own`);
}
const wait = values.wait === undefined ? APPLY_LOCK_WAIT_SECONDS : Number(values.wait);
if (!/^\d{1,5}$/.test(values.wait ?? '0') || wait > 86_400)
  usage('--wait takes the seconds to wait for another db:apply on this database (0 to 86400)');
const erpApplications = values['erp-applications'] === true;
const password = process.env.DB_LOGIN_PASSWORD;
if (values.login && !password && !values.plan)
  usage("--login needs the new login's password in DB_LOGIN_PASSWORD");
// Each option does only its own part: the scripts run when nothing else was asked, or when asked.
const scripts = Boolean(values.schema || values.demo) || (role === undefined && changeFeed === undefined);

const db = createMssqlDatabase({ connectionString: forScripts(connectionString) });
try {
  await applyToTenantDatabase(
    db,
    {
      scripts,
      demo: values.demo === true,
      changeFeed: names.map((name) => name!),
      plan: values.plan === true,
      documentsElsewhere: values['documents-elsewhere'] === true,
      erpApplications,
      waitSeconds: wait,
      ...(role !== undefined
        ? {
            role: {
              role,
              read: list(values.read),
              execute: list(values.execute),
              erpApplications,
              ...(values.login ? { login: { name: values.login, password: password ?? '' } } : {}),
            },
          }
        : {}),
    },
    (line) => console.log(line),
  );
} catch (error) {
  // The driver's message names the statement that failed, never the password.
  console.error(
    error instanceof ServiceRoleError || error instanceof TenantDatabaseError
      ? `db:apply: ${error.message}`
      : `db:apply failed: ${(error as Error).message}`,
  );
  process.exitCode = 1;
} finally {
  await db.close();
}
