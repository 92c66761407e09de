import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { applyServiceRole } from '../../shared/adapters/mssql/service-role.js';
import {
  openDatabase,
  registerEmbeddedDatabase,
  unregisterEmbeddedDatabase,
} from '../../shared/config/databases.js';
import { ConfigurationError } from '../../shared/config/settings.js';
import type { DatabaseConnection, TenantRegistry } from '../../shared/config/tenants.js';
import type { Database } from '../../shared/core/database.js';
import { type EmbeddedInspector, openEmbeddedDatabaseThread } from './embedded-thread.js';
import { DEMO_DATABASE, startTsqlDemo, withLogin } from './tsql-engine.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SQL_DIR = join(ROOT, 'infra', 'sql', 'embedded');
const DATA_DIR = join(ROOT, '.data');

async function schemaFiles(): Promise<{ name: string; text: string }[]> {
  const names = (await readdir(SQL_DIR)).filter((n) => n.endsWith('.sql')).sort();
  return Promise.all(
    names.map(async (name) => ({ name, text: await readFile(join(SQL_DIR, name), 'utf8') })),
  );
}

/** Builds a fresh embedded database from `infra/sql/embedded/*.sql` (a few seconds). */
export async function buildDemoDatabase(): Promise<PGlite> {
  const db = new PGlite();
  for (const file of await schemaFiles()) {
    try {
      await db.exec(file.text);
    } catch (error) {
      throw new Error(`infra/sql/embedded/${file.name} failed: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
  // Statistics and the visibility map of the big table, so that paging finds a page's keys with
  // an index-only scan of its primary key (VACUUM cannot run inside the scripts' transaction).
  await db.exec('VACUUM ANALYZE dbo."DOKUMENT"');
  return db;
}

/**
 * The path of the prepared demo database (a data-dir dump), built once per version of the SQL
 * files and reused: opening it takes well under a second, building it several.
 */
export async function demoSnapshot(): Promise<string> {
  const files = await schemaFiles();
  // The salt changes when the build itself does (not only the SQL files).
  const hash = createHash('sha256').update('build 2: vacuum analyze DOKUMENT\0');
  for (const file of files) hash.update(file.name).update('\0').update(file.text).update('\0');
  const path = join(DATA_DIR, `demo-${hash.digest('hex').slice(0, 16)}.tar.gz`);
  if (await stat(path).catch(() => undefined)) return path;
  const db = await buildDemoDatabase();
  const dump = await db.dumpDataDir('gzip');
  await db.close();
  await mkdir(DATA_DIR, { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, Buffer.from(await dump.arrayBuffer()));
  await rename(temporary, path);
  return path;
}

/**
 * Every start of a demo database begins from the same prepared copy, its change feeds' rows
 * (SVC_CHANGE_FEED, the service's table) with it: the same FEED_ID and batches numbered again from
 * the copy's. Each start gives every recording a new identity, as turning it on again does, so
 * that a sync token of an earlier start is 410 `sync_token_expired` instead of being read against
 * batches that now number other changes (CONTRACT 4b: a committed change never goes missing).
 */
export const NEW_FEED_IDENTITIES = {
  embedded: 'UPDATE dbo."SVC_CHANGE_FEED" SET "FEED_ID" = gen_random_uuid()',
  mssql: 'UPDATE dbo.SVC_CHANGE_FEED SET FEED_ID = NEWID()',
} as const;

/** Opens an in-memory copy of the demo database. */
export async function openDemoDatabase(): Promise<PGlite> {
  const snapshot = await readFile(await demoSnapshot());
  const db = new PGlite({ loadDataDir: new Blob([snapshot]) });
  await db.waitReady;
  await db.exec('SET search_path TO dbo, public');
  await db.exec(NEW_FEED_IDENTITIES.embedded);
  return db;
}

/** Where the local stack keeps the demo tenant's data: LOCAL_DATABASE=embedded (default) or tsql. */
export type LocalDatabaseKind = 'embedded' | 'tsql';

/** One of `choices` from an environment variable (the first when unset), or a ConfigurationError naming them. */
function localChoice<T extends string>(name: string, value: string | undefined, choices: readonly T[]): T {
  const chosen = (value || choices[0]!).trim().toLowerCase();
  if (!choices.includes(chosen as T)) {
    throw new ConfigurationError(
      `${name} must be ${choices.map((choice) => `"${choice}"`).join(' or ')}, not "${value}"`,
    );
  }
  return chosen as T;
}

export function localDatabaseKind(value = process.env.LOCAL_DATABASE): LocalDatabaseKind {
  return localChoice('LOCAL_DATABASE', value, ['embedded', 'tsql']);
}

/**
 * Which login the demo tenant's registry entry connects with on the T-SQL engine:
 * LOCAL_DATABASE_LOGIN=admin (default: the engine's administrator) or `service-role`: a login
 * holding only the role `npm run db:apply -- --role` creates (docs/sql-server.md, "Permissions"),
 * as an ERP's administrator would grant the service. The stack's own statements (the ERP's
 * stand-in routes) keep the administrator's connection: they are the ERP, not the service.
 */
export type LocalDatabaseLogin = 'admin' | 'service-role';

export function localDatabaseLogin(value = process.env.LOCAL_DATABASE_LOGIN): LocalDatabaseLogin {
  return localChoice('LOCAL_DATABASE_LOGIN', value, ['admin', 'service-role']);
}

/** The role and login of LOCAL_DATABASE_LOGIN=service-role. */
export const LOCAL_SERVICE_ROLE = 'svc_gateway';
export const LOCAL_SERVICE_LOGIN = 'svc_gateway_local';

/**
 * What the demo tenant serves (`"dataSources": "*"` less the service's internal tables), granted
 * SELECT with `--read`; and its `setFile` procedure, with `--execute`.
 */
export const DEMO_READS = ['SUBJECT', 'UCET', 'DOKUMENT', 'V_DOKUMENT_SOUBOR', 'DEMO_FILE_EVENT'];
export const DEMO_SET_FILE_PROCEDURES = ['DEMO_FILE_RECEIVED'];
/**
 * On the T-SQL engine a procedure runs with its caller's permissions (PostgreSQL's, not SQL
 * Server's ownership chaining): what the demo procedures themselves touch. On SQL Server, EXECUTE
 * on the procedure is enough (docs/sql-server.md, "Permissions").
 */
export const DEMO_PROCEDURES_OWN_GRANTS = [
  `GRANT INSERT ON dbo.DEMO_FILE_EVENT TO ${LOCAL_SERVICE_ROLE}`,
  `GRANT EXECUTE ON dbo.WS_WAIT TO ${LOCAL_SERVICE_ROLE}`,
  // 2001 and 2002 write a DOKUMENT, whose change-feed trigger writes its change table.
  `GRANT INSERT ON dbo.DOKUMENT TO ${LOCAL_SERVICE_ROLE}`,
  `GRANT INSERT ON dbo.SVC_CHANGES_DOKUMENT TO ${LOCAL_SERVICE_ROLE}`,
];

/** The role of the service's login on the demo database, and a login in it; its connection string. */
async function serviceRoleLogin(admin: Database, url: string): Promise<string> {
  const password = `Svc-${randomBytes(18).toString('hex')}`;
  await applyServiceRole(admin, {
    role: LOCAL_SERVICE_ROLE,
    read: DEMO_READS,
    execute: DEMO_SET_FILE_PROCEDURES,
    login: { name: LOCAL_SERVICE_LOGIN, password },
  });
  for (const grant of DEMO_PROCEDURES_OWN_GRANTS) await admin.query(grant);
  return withLogin(url, LOCAL_SERVICE_LOGIN, password);
}

/** A demo database of its own for the local stack (or a test), in either kind. */
export interface LocalDemoDatabase {
  readonly kind: LocalDatabaseKind;
  /** The database port on it, for the stack's own statements and the tests' checks. */
  readonly database: Database;
  /** How the tenant registry names it. */
  readonly connection: DatabaseConnection;
  /**
   * The role the tenant's login holds (LOCAL_DATABASE_LOGIN=service-role), for tests that act as
   * the ERP's administrator: a table they add is the service's only once granted to it.
   */
  readonly serviceRole?: string;
  /** For the start banner: where the data lives (no credentials). */
  readonly description: string;
  /** Raw SQL on the embedded database (embedded kind only), for tests that look inside PostgreSQL. */
  readonly pglite?: EmbeddedInspector;
  /** Whether the database is open, answered at once (embedded kind only; see LocalRouteContext). */
  readonly isOpen?: () => Promise<boolean>;
  close(): Promise<void>;
}

/**
 * Opens a fresh copy of the demo database: embedded (registered as `name`), or on the T-SQL engine
 * (infra/local/tsql-engine.ts: MSSQL_URL, else an engine of its own from TSQL_ENGINE_DIR), where
 * the tenant logs in as `login` says (the embedded database has no logins).
 */
export async function openLocalDemoDatabase(
  kind: LocalDatabaseKind,
  name = 'demo',
  login: LocalDatabaseLogin = localDatabaseLogin(),
): Promise<LocalDemoDatabase> {
  if (kind === 'embedded') {
    // On a thread of its own, so that a long statement never holds the stack's other requests.
    const thread = await openEmbeddedDatabaseThread(await readFile(await demoSnapshot()));
    try {
      await thread.database.query(NEW_FEED_IDENTITIES.embedded);
    } catch (error) {
      await thread.close();
      throw error;
    }
    registerEmbeddedDatabase(name, thread.database);
    return {
      kind,
      database: thread.database,
      connection: { kind: 'embedded', name },
      description: 'embedded database (PGlite, on a thread of this process)',
      pglite: thread.inspector,
      isOpen: async () => thread.isOpen(),
      async close() {
        unregisterEmbeddedDatabase(name);
        await thread.close();
      },
    };
  }
  const demo = await startTsqlDemo();
  const admin: DatabaseConnection = { kind: 'mssql', connectionString: demo.url };
  const database = await openDatabase(admin);
  // The engine's copy is of one prepared demo too (a new database on MSSQL_URL has new ones already).
  try {
    await database.query(NEW_FEED_IDENTITIES.mssql);
  } catch (error) {
    await database.close();
    await demo.stop();
    throw error;
  }
  const asServiceRole = login === 'service-role';
  const connection: DatabaseConnection = asServiceRole
    ? { kind: 'mssql', connectionString: await serviceRoleLogin(database, demo.url) }
    : admin;
  return {
    kind,
    database,
    connection,
    ...(asServiceRole ? { serviceRole: LOCAL_SERVICE_ROLE } : {}),
    description: `${
      demo.port
        ? `T-SQL engine (Babelfish) on 127.0.0.1:${demo.port}, database ${DEMO_DATABASE}\n` +
          // The engine's own local login (loopback only; ../shared/tsql-engine/README.md), to look inside.
          `               login: ${demo.url}`
        : 'a new demo database on the SQL Server of MSSQL_URL'
    }${asServiceRole ? `, the tenant logging in as ${LOCAL_SERVICE_LOGIN} (role ${LOCAL_SERVICE_ROLE} only)` : ''}`,
    async close() {
      await database.close();
      await demo.stop();
    },
  };
}

/** Every embedded database a registry names, each with the path of the first setting naming it. */
export function embeddedDatabasesOf(registry: TenantRegistry): Map<string, string> {
  const names = new Map<string, string>();
  for (const id of registry.ids()) {
    const tenant = registry.get(id)!;
    for (const key of ['database', 'documentDatabase'] as const) {
      const connection = tenant[key];
      if (connection?.kind === 'embedded' && !names.has(connection.name)) {
        names.set(connection.name, `tenants.${id}.${key}.name`);
      }
    }
  }
  return names;
}

/**
 * The tenant registry document with every use of the embedded demo database (`{"kind":"embedded",
 * "name":"demo"}`) pointed at `connection` instead: how LOCAL_DATABASE=tsql moves the demo tenant.
 */
export function withDemoConnection(registry: unknown, connection: DatabaseConnection): unknown {
  const isDemo = (value: unknown) =>
    typeof value === 'object' &&
    value !== null &&
    (value as Record<string, unknown>).kind === 'embedded' &&
    (value as Record<string, unknown>).name === 'demo';
  // Only the shape the registry's validator accepts is filled in; any other is left as written, for
  // the validator to refuse with its path (an array must not turn into an object of "0", "1", …).
  const isPlainObject = (value: unknown): value is Record<string, unknown> =>
    typeof value === 'object' && value !== null && !Array.isArray(value);
  if (!isPlainObject(registry) || !isPlainObject(registry.tenants)) return registry;
  const tenants = registry.tenants as Record<string, unknown>;
  if (!Object.values(tenants).every(isPlainObject)) return registry;
  return {
    ...(registry as object),
    tenants: Object.fromEntries(
      Object.entries(tenants).map(([id, tenant]) => [
        id,
        Object.fromEntries(
          Object.entries(tenant as Record<string, unknown>).map(([key, value]) => [
            key,
            (key === 'database' || key === 'documentDatabase') && isDemo(value) ? connection : value,
          ]),
        ),
      ]),
    ),
  };
}
