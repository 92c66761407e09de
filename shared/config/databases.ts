import type { Database, SqlDialectName } from '../core/database.js';
import { ConfigurationError } from './settings.js';
import type { DatabaseConnection } from './tenants.js';

const embedded = new Map<string, Database>();
const opened = new Map<string, Promise<Database>>();

/** Makes an embedded database known under `name` (the local stack and tests call this). */
export function registerEmbeddedDatabase(name: string, database: Database): void {
  embedded.set(name, database);
}

export function unregisterEmbeddedDatabase(name: string): void {
  embedded.delete(name);
}

/**
 * The adapter of a port for the database's dialect: each SQL adapter folder
 * (`shared/adapters/mssql`, `shared/adapters/embedded-sql`) implements every port in its SQL.
 */
export function byDialect<T>(db: Database, adapters: Record<SqlDialectName, (db: Database) => T>): T {
  return adapters[db.dialect.name](db);
}

/** The database for a tenant connection, opened once per process and reused. */
export async function openDatabase(connection: DatabaseConnection): Promise<Database> {
  if (connection.kind === 'embedded') {
    const database = embedded.get(connection.name);
    if (!database) throw new ConfigurationError(`No embedded database is registered as "${connection.name}"`);
    return database;
  }
  const key = connection.connectionString;
  let database = opened.get(key);
  if (!database) {
    // Imported on demand so that bundles of functions without a database stay small.
    database = import('../adapters/mssql/index.js').then(({ createMssqlDatabase }) =>
      createMssqlDatabase({ connectionString: key }),
    );
    opened.set(key, database);
  }
  return database;
}
