import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createMssqlDatabase } from '../../shared/adapters/mssql/index.js';
import {
  addWebApiApplication,
  RegistrationError,
  registerWebApiOperation,
} from '../../shared/adapters/mssql/web-api-registration.js';
import { forScripts } from '../local/mssql-scripts.js';

// Usage (docs/api.md "Adding an application or an operation"):
//   npm run -s web-api -- application '<connection string>' --name 'Partner s.r.o.' [--key K] [--hash H]
//   npm run -s web-api -- operation '<connection string>' --vltyp 1002 --procedure dbo.MY_PROC --row-name Row [--name '…']
// On the tenant's SQL Server database (the connection string, or DB_APPLY_URL). A new application's
// key and API hash are made at random unless given, and printed once: give them to the partner.
const USAGE = `usage:
  npm run -s web-api -- application '<connection string>' --name <name> [--key <api key>] [--hash <api hash>]
  npm run -s web-api -- operation '<connection string>' --vltyp <n> --procedure <schema.NAME> --row-name <Name> [--name <text>]
  (the connection string may be left out when DB_APPLY_URL holds it)`;

let parsed: ReturnType<typeof parse>;
function parse() {
  return parseArgs({
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      key: { type: 'string' },
      hash: { type: 'string' },
      vltyp: { type: 'string' },
      procedure: { type: 'string' },
      'row-name': { type: 'string' },
    },
  });
}
try {
  parsed = parse();
} catch (error) {
  console.error(`${(error as Error).message}\n${USAGE}`);
  process.exit(2);
}
const [command, connectionString = process.env.DB_APPLY_URL] = parsed.positionals;
const { values } = parsed;
if (!connectionString || (command !== 'application' && command !== 'operation')) {
  console.error(USAGE);
  process.exit(2);
}
const db = createMssqlDatabase({ connectionString: forScripts(connectionString) });
try {
  if (command === 'application') {
    if (!values.name) throw new RegistrationError('--name is required: who the application is');
    const apiKey = values.key ?? `key-${randomBytes(12).toString('base64url')}`;
    const apiHash = values.hash ?? randomBytes(24).toString('base64url');
    const id = await addWebApiApplication(db, { name: values.name, apiKey, apiHash });
    console.log(JSON.stringify({ ok: true, application: id, apiKey, apiHash }));
  } else {
    const vltyp = Number(values.vltyp);
    if (!values.vltyp || !values.procedure || !values['row-name']) {
      throw new RegistrationError('--vltyp, --procedure and --row-name are required');
    }
    const outcome = await registerWebApiOperation(db, {
      vltyp,
      procedure: values.procedure,
      rowName: values['row-name'],
      name: values.name,
    });
    console.log(JSON.stringify({ ok: true, operation: vltyp, outcome }));
  }
} catch (error) {
  // Our own refusals say what is wrong; anything else names its kind only (a connection string holds a password).
  console.error(
    error instanceof RegistrationError
      ? error.message
      : `failed: ${(error as Error).name}: ${(error as Error).message}`,
  );
  process.exitCode = 1;
} finally {
  await db.close();
}
