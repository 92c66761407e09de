import { tracedBy } from '../adapters/otel/traced-database.js';
import { rememberedCatalogue } from '../core/data-api/data-source.js';
import type { Database, SqlDialectName } from '../core/database.js';
import { processWide } from '../core/process-wide.js';
import type { TraceContext } from '../core/trace-context.js';
import { currentFunctionInstance } from './function-instance.js';
import { ConfigurationError, getSettings } from './settings.js';
import type { DatabaseConnection } from './tenants.js';

/** One per process (see process-wide.ts): the stack's embedded databases reach its packaged functions. */
const embedded = processWide('embedded-databases', () => new Map<string, Database>());
/**
 * One per process: what opens an embedded database that is not registered yet (the local stack
 * sets it, so that a tenant of kind `embedded` added to the registry while it runs is served too).
 */
const embeddedOpener = processWide('embedded-database-opener', () => ({
  open: undefined as ((name: string) => Promise<Database>) | undefined,
}));
const opened = new Map<string, Promise<Database>>();
const withCatalogue = new WeakMap<Database, Database>();

/**
 * The database with its catalogue lookups remembered for `CATALOGUE_CACHE_SECONDS`, one memory per
 * database and process: every request wraps the database anew (its own cancellation signal, see
 * `cancelledBy`), and those wrappers share this catalogue.
 */
function remembering(database: Database): Database {
  let wrapped = withCatalogue.get(database);
  if (!wrapped) {
    const catalogue = rememberedCatalogue(database, getSettings().catalogueCacheSeconds * 1000);
    wrapped = {
      ...database,
      findDataSource: (schema, name) => catalogue.findDataSource(schema, name),
      listDataSources: () => catalogue.listDataSources(),
      forgetDataSource: (schema, name) => catalogue.forgetDataSource?.(schema, name) ?? false,
    };
    withCatalogue.set(database, wrapped);
  }
  return wrapped;
}

/** Makes an embedded database known under `name` (the local stack and tests call this). */
export function registerEmbeddedDatabase(name: string, database: Database): void {
  embedded.set(name, database);
}

export function unregisterEmbeddedDatabase(name: string): void {
  embedded.delete(name);
}

/** Sets (or with undefined, clears) what opens an embedded database asked for by a name not registered. */
export function useEmbeddedDatabaseOpener(open: ((name: string) => Promise<Database>) | undefined): void {
  embeddedOpener.open = open;
}

/**
 * The adapter of a port for the database's dialect: each SQL adapter folder
 * (`shared/adapters/mssql`, `shared/adapters/embedded`) implements every port in its SQL.
 */
export function byDialect<T>(db: Database, adapters: Record<SqlDialectName, (db: Database) => T>): T {
  return adapters[db.dialect.name](db);
}

/**
 * The database for a tenant connection, opened once per process and reused. With `trace` (the
 * request's or the record's span), each statement is a span of its own, a child of it, when spans
 * are exported (shared/core/tracing.ts); otherwise the database as opened.
 */
export async function openDatabase(connection: DatabaseConnection, trace?: TraceContext): Promise<Database> {
  return tracedBy(await openUntraced(connection), trace);
}

async function openUntraced(connection: DatabaseConnection): Promise<Database> {
  if (connection.kind === 'embedded') {
    const database = embedded.get(connection.name) ?? (await embeddedOpener.open?.(connection.name));
    if (!database) throw new ConfigurationError(`No embedded database is registered as "${connection.name}"`);
    return remembering(database);
  }
  const { connectionString, tls } = connection;
  // The same server with other TLS settings is another database: its own pool, its own handshake.
  const key = JSON.stringify([connectionString, tls?.ca ?? null, tls?.serverName ?? null]);
  let database = opened.get(key);
  if (!database) {
    // Imported on demand so that bundles of functions without a database stay small. Each
    // statement takes its connection from the pool of the function instance it runs in, of the
    // size DB_POOL_MAX gives the function (docs/sql-server.md "Connections to SQL Server").
    database = import('../adapters/mssql/index.js').then(({ createMssqlDatabase }) =>
      remembering(createMssqlDatabase({ connectionString, tls, poolOwner: currentFunctionInstance })),
    );
    opened.set(key, database);
  }
  return database;
}
