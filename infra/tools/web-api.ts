import { parseArgs } from 'node:util';
import { createMssqlDatabase } from '../../shared/adapters/mssql/index.js';
import {
  RegistrationError,
  registerWebApiOperation,
} from '../../shared/adapters/mssql/web-api-registration.js';
import { forScripts } from './mssql-scripts.js';
import { applicationEntry, newApiHash } from './web-api-application.js';

// Usage (docs/api.md "Adding an application or an operation"):
//   npm run -s web-api -- application --id 4 --name 'Partner s.r.o.' [--key K] [--hash H]
//   npm run -s web-api -- hash
//   npm run -s web-api -- operation '<connection string>' --vltyp 1002 --procedure dbo.MY_PROC --row-name Row [--name '…']
// An application lives in the tenant registry (CONTRACT.md section 2), beside the other
// credentials: `application` prints its entry for the tenant's `webApi.applications`, its key and
// API hash made at random unless given (give them to the partner once, over a safe channel); it
// writes nothing anywhere. `hash` prints a new API hash (a rotation: add it beside the old one).
// An ERP that keeps its own register (WS_APPLICATION) fills it itself: the service only reads it.
// An operation is a row of WS_OPERATION in the tenant's SQL Server database (the connection
// string, or DB_APPLY_URL).
const USAGE = `usage:
  npm run -s web-api -- application --id <n> --name <name> [--key <api key>] [--hash <api hash>]
  npm run -s web-api -- hash
  npm run -s web-api -- operation '<connection string>' --vltyp <n> --procedure <schema.NAME> --row-name <Name> [--name <text>]
  (application prints the entry for the tenant's "webApi": {"applications": […]} in the registry;
   operation writes dbo.WS_OPERATION; its connection string may be left out when DB_APPLY_URL holds it)`;

let parsed: ReturnType<typeof parse>;
function parse() {
  return parseArgs({
    allowPositionals: true,
    options: {
      id: { type: 'string' },
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

if (command === 'application' || command === 'hash') {
  try {
    console.log(command === 'hash' ? newApiHash() : JSON.stringify(applicationEntry(values)));
  } catch (error) {
    console.error(error instanceof RegistrationError ? error.message : String(error));
    process.exitCode = 1;
  }
} else if (command === 'operation' && connectionString) {
  const db = createMssqlDatabase({ connectionString: forScripts(connectionString) });
  try {
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
} else {
  console.error(USAGE);
  process.exit(2);
}
