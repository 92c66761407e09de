import { execFile, execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import {
  appendFile,
  chmod,
  chown,
  mkdir,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createMssqlDatabase } from '../../shared/adapters/mssql/index.js';
import { forScripts, MSSQL_SCRIPTS_DIR, mssqlScriptFiles, scriptBatches } from '../tools/mssql-scripts.js';
import { applyToTenantDatabase } from '../tools/tenant-database.js';
import { ownerEnded } from './process-alive.js';

/**
 * The T-SQL engine for the tests and the local stack (LOCAL_DATABASE=tsql): a SQL Server given by
 * MSSQL_URL, or else Babelfish for PostgreSQL from TSQL_ENGINE_DIR, started here on free ports.
 *
 * The demo database (infra/sql/mssql/*.sql: schema, procedures, demo data) is built once per
 * version of the scripts and of the engine, in an engine data directory kept under .data/; each
 * start copies that directory and starts an engine of its own on it, so every start begins from
 * the same demo data in about a second instead of the ten it takes to build.
 */

const run = promisify(execFile);
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const DATA_DIR = join(ROOT, '.data');
/** Where engine.sh unpacks the engine (once per archive) and the prepared demo directories live. */
const ENGINE_WORK = join(DATA_DIR, 'tsql-engine');
const RUNS_DIR = join(DATA_DIR, 'tsql-runs');
/** The T-SQL database the demo objects are created in. */
export const DEMO_DATABASE = 'demo';

/** The engine's directory: TSQL_ENGINE_DIR, relative to the repository root, default ../shared/tsql-engine. */
export function tsqlEngineDir(): string {
  return resolve(ROOT, process.env.TSQL_ENGINE_DIR || '../shared/tsql-engine');
}

/** Whether a T-SQL database is at hand: MSSQL_URL, or the engine's start script. */
export function tsqlAvailable(): boolean {
  return Boolean(process.env.MSSQL_URL) || existsSync(join(tsqlEngineDir(), 'engine.sh'));
}

const isUrl = (connectionString: string) => /^(mssql|sqlserver):\/\//i.test(connectionString);

/** An ADO-style (`k=v;`) connection string without the keywords `dropped` matches, with `added`. */
function replacingKeywords(connectionString: string, dropped: RegExp, added: readonly string[]): string {
  const parts = connectionString.split(';').filter((part) => part.trim() && !dropped.test(part));
  return [...parts, ...added].join(';');
}

/** `connectionString` with its database set to `database` (ADO-style `k=v;` or `mssql://` URL). */
export function withDatabase(connectionString: string, database: string): string {
  if (isUrl(connectionString)) {
    const url = new URL(connectionString);
    url.pathname = `/${encodeURIComponent(database)}`;
    return url.toString();
  }
  return replacingKeywords(connectionString, /^\s*(database|initial catalog)\s*=/i, [`Database=${database}`]);
}

/** `connectionString` logging in as `user` with `password` instead (ADO-style `k=v;` or `mssql://` URL). */
export function withLogin(connectionString: string, user: string, password: string): string {
  if (isUrl(connectionString)) {
    const url = new URL(connectionString);
    url.username = encodeURIComponent(user);
    url.password = encodeURIComponent(password);
    return url.toString();
  }
  return replacingKeywords(connectionString, /^\s*(user id|uid|user|password|pwd)\s*=/i, [
    `User Id=${user}`,
    `Password=${password}`,
  ]);
}

/**
 * The TLS identity an engine copy presents (PEM texts): with it, the engine encrypts every
 * connection and refuses clients that will not, as a SQL Server with "Force Encryption" does
 * (../shared/tsql-engine/README.md, "Encrypted connections (TLS)").
 */
export interface TsqlEngineTls {
  /** The server's certificate, optionally followed by its intermediate CAs. */
  readonly certificate: string;
  /** The certificate's private key (unencrypted PEM). */
  readonly key: string;
}

export interface TsqlDemoOptions {
  /** An engine copy even when MSSQL_URL names a server (implied by `tls`). */
  readonly engine?: boolean;
  /** Start the engine with TLS on (the engine only: a SQL Server of MSSQL_URL keeps its own settings). */
  readonly tls?: TsqlEngineTls;
}

/** A running T-SQL database with the demo objects and data. */
export interface TsqlDemo {
  /**
   * Connection string of the demo database (MSSQL_URL style, `Database=` included). Without TLS it
   * turns encryption off (`Encrypt=false`); with TLS it says nothing about it, so the driver's
   * default applies: encrypted and verified, against `Server=localhost`.
   */
  readonly url: string;
  /** The TDS port when this process started the engine. */
  readonly port?: number;
  /** Stops the engine (or drops the demo database on a MSSQL_URL server). Idempotent. */
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

/** PostgreSQL refuses to run as root: the engine then runs as `nobody`, which must reach its files. */
async function openForEngineUser(path: string): Promise<void> {
  if (process.getuid?.() !== 0) return;
  for (let dir = path; dir !== dirname(dir); dir = dirname(dir)) {
    await chmod(dir, ((await stat(dir)).mode & 0o7777) | 0o001).catch(() => undefined);
  }
}

async function sha256OfFile(path: string): Promise<string> {
  return createHash('sha256')
    .update(await readFile(path))
    .digest('hex');
}

/** Key of the prepared demo: the scripts' names and texts, what runs them, and the engine archive. */
async function demoKey(): Promise<string> {
  const hash = createHash('sha256');
  for (const [name, path] of [
    ...mssqlScriptFiles().map((name) => [name, join(MSSQL_SCRIPTS_DIR, name)]),
    ['erp-stand-in.sql', ERP_STAND_IN],
    ['tenant-database.ts', join(ROOT, 'infra', 'tools', 'tenant-database.ts')],
    ['mssql-scripts.ts', join(ROOT, 'infra', 'tools', 'mssql-scripts.ts')],
  ] as [string, string][]) {
    hash.update(name).update('\0').update(readFileSync(path)).update('\0');
  }
  hash.update(await sha256OfFile(join(tsqlEngineDir(), 'tsql-engine.tar.zst')));
  return hash.digest('hex').slice(0, 16);
}

async function engineScript(...args: string[]): Promise<string> {
  const { stdout } = await run(join(tsqlEngineDir(), 'engine.sh'), args, {
    env: process.env,
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout;
}

/** Stops the server of `dataDir` (pg_ctl fast shutdown); quiet when it is not running. */
async function stopServer(dataDir: string): Promise<void> {
  await run(join(ENGINE_WORK, 'babelfish', 'stop.sh'), [dataDir]).catch(() => undefined);
}

async function withLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const lock = join(DATA_DIR, `${name}.lock`);
  await mkdir(DATA_DIR, { recursive: true });
  const deadline = Date.now() + 10 * 60_000;
  while (true) {
    try {
      await mkdir(lock);
      await writeFile(join(lock, 'pid'), String(process.pid));
      break;
    } catch {
      // Another process prepares it; a lock whose owner died is taken over.
      const owner = Number(await readFile(join(lock, 'pid'), 'utf8').catch(() => '0'));
      if (ownerEnded(owner)) await rm(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${lock}`);
      await new Promise((wake) => setTimeout(wake, 200));
    }
  }
  try {
    return await fn();
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}

export interface PreparedDemo {
  /** The engine data directory holding the demo database, ready to be copied. */
  readonly dataDir: string;
  /** Milliseconds spent building it now; 0 when it was there already. */
  readonly builtInMs: number;
}

/**
 * The engine data directory with the demo database, built once per version of infra/sql/mssql
 * and of the engine (about 10 s: engine unpack and initialisation, scripts, 100,000 DOKUMENT rows).
 */
export async function prepareTsqlDemo(): Promise<PreparedDemo> {
  const key = await demoKey();
  const prepared = join(ENGINE_WORK, `demo-${key}`);
  if (existsSync(join(prepared, 'PG_VERSION'))) return { dataDir: prepared, builtInMs: 0 };
  return withLock('tsql-demo', async () => {
    if (existsSync(join(prepared, 'PG_VERSION'))) return { dataDir: prepared, builtInMs: 0 };
    const started = Date.now();
    const building = join(ENGINE_WORK, 'data');
    await stopServer(building);
    await rm(building, { recursive: true, force: true });
    const port = await freePort();
    // Unpacks the engine into ENGINE_WORK (once per archive), initialises ENGINE_WORK/data and starts it.
    const output = await engineScript('start', ENGINE_WORK, String(port));
    const serverUrl = /MSSQL_URL=(.*)$/m.exec(output)?.[1]?.trim();
    if (!serverUrl) throw new Error(`engine.sh start printed no MSSQL_URL:\n${output}`);
    try {
      await createDemoDatabase(serverUrl, DEMO_DATABASE);
    } finally {
      await stopServer(building);
    }
    // Old versions go: each is ~150 MB.
    for (const entry of await readdir(ENGINE_WORK)) {
      if (entry.startsWith('demo-') && entry !== `demo-${key}`) {
        await rm(join(ENGINE_WORK, entry), { recursive: true, force: true });
      }
    }
    await rename(building, prepared);
    return { dataDir: prepared, builtInMs: Date.now() - started };
  });
}

/**
 * Tables the ERP stand-in has of its own (infra/local/erp-stand-in.sql), which the service's role
 * is never granted: with LOCAL_DATABASE_LOGIN=service-role they are 404 to the Data API.
 */
export const ERP_STAND_IN_OWN_TABLES = ['ERP_AUDIT'];

/** The ERP stand-in's own objects (infra/local/erp-stand-in.sql). */
const ERP_STAND_IN = join(ROOT, 'infra', 'local', 'erp-stand-in.sql');

/**
 * Creates `database` on the server of `serverUrl` as a tenant's database is deployed: first the ERP
 * (the demo's ERP objects and data, then what the stand-in has of its own, infra/local/erp-stand-in.sql),
 * then the service's objects by what `npm run db:apply` runs (its check of the ERP's objects
 * included), then the demo's procedures, operations and change feed (`--demo`).
 */
export async function createDemoDatabase(serverUrl: string, database: string): Promise<void> {
  const server = createMssqlDatabase({ connectionString: serverUrl });
  try {
    // The name is ours (letters, digits, underscores), never a caller's text.
    await server.query(`IF DB_ID(N'${database}') IS NULL CREATE DATABASE ${database}`);
  } finally {
    await server.close();
  }
  const demo = createMssqlDatabase({ connectionString: forScripts(withDatabase(serverUrl, database)) });
  try {
    const erpFiles = mssqlScriptFiles().filter((file) => /^demo\/0[12]\d-erp-/.test(file));
    for (const file of erpFiles) for (const batch of scriptBatches(file)) await demo.query(batch);
    const standIn = readFileSync(ERP_STAND_IN, 'utf8').split(/^[ \t]*GO[ \t]*;?[ \t]*\r?$/im);
    for (const batch of standIn.map((text) => text.trim()).filter(Boolean)) await demo.query(batch);
    await applyToTenantDatabase(
      demo,
      { scripts: true, demo: true, changeFeed: [], plan: false },
      () => undefined,
    );
  } finally {
    await demo.close();
  }
}

const running = new Set<string>();
let exitHookInstalled = false;

/** Last resort: engines of this process stop with it even when nobody called stop(). */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const dataDir of running) {
      try {
        execFileSync(join(ENGINE_WORK, 'babelfish', 'stop.sh'), [dataDir], { stdio: 'ignore' });
      } catch {
        // Nothing more can be done while exiting.
      }
    }
  });
}

async function connectable(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (true) {
    const db = createMssqlDatabase({ connectionString: url });
    try {
      await db.query('SELECT 1 AS ok');
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((wake) => setTimeout(wake, 100));
    } finally {
      await db.close().catch(() => undefined);
    }
  }
}

/**
 * Engines whose process ended without stopping them (killed by a signal, a crash): each copy's
 * directory is named after the pid that started it. They are stopped and removed.
 */
async function stopOrphans(): Promise<void> {
  const entries = await readdir(RUNS_DIR).catch(() => [] as string[]);
  for (const entry of entries) {
    const owner = Number(entry.split('-')[0]);
    if (!ownerEnded(owner)) continue;
    await stopServer(join(RUNS_DIR, entry, 'data'));
    await rm(join(RUNS_DIR, entry), { recursive: true, force: true });
  }
}

/**
 * Puts `tls` into the (stopped) engine copy's data directory and turns TLS on: PostgreSQL's
 * certificate and key (owned by the server's user, key mode 600, or PostgreSQL refuses to start)
 * and Babelfish's switch that makes the TDS endpoint require encryption.
 */
async function enableTls(dataDir: string, tls: TsqlEngineTls): Promise<void> {
  const owner = await stat(dataDir);
  const certificate = join(dataDir, 'server.pem');
  const key = join(dataDir, 'server.key');
  await writeFile(certificate, tls.certificate, { mode: 0o644 });
  await writeFile(key, tls.key, { mode: 0o600 });
  for (const file of [certificate, key]) await chown(file, owner.uid, owner.gid);
  await chmod(key, 0o600);
  await appendFile(
    join(dataDir, 'postgresql.conf'),
    "\n# ---- TLS\nssl = on\nssl_cert_file = 'server.pem'\nssl_key_file = 'server.key'\nbabelfishpg_tds.tds_ssl_encrypt = on\n",
  );
}

/**
 * Starts an engine of its own on a copy of the prepared demo (free ports, a work directory under
 * .data/tsql-runs/), waits until it answers, and returns the demo database's connection string.
 */
async function startEngineCopy(options: TsqlDemoOptions = {}): Promise<TsqlDemo> {
  const { dataDir: prepared } = await prepareTsqlDemo();
  await stopOrphans();
  const work = join(RUNS_DIR, `${process.pid}-${randomBytes(4).toString('hex')}`);
  const dataDir = join(work, 'data');
  await mkdir(work, { recursive: true });
  await openForEngineUser(work);
  // cp -a keeps the owner (nobody, when started as root) and the 0700 mode PostgreSQL insists on.
  await run('cp', ['-a', prepared, dataDir]);
  const [tdsPort, pgPort] = [await freePort(), await freePort()];
  // Later settings win: this copy listens on its own ports and keeps its socket in its own directory.
  await appendFile(
    join(dataDir, 'postgresql.conf'),
    `\n# ---- this copy\nport = ${pgPort}\nbabelfishpg_tds.port = ${tdsPort}\nunix_socket_directories = '${dataDir}'\n`,
  );
  if (options.tls) await enableTls(dataDir, options.tls);
  // The server writes its log beside its data directory, as the data directory's owner.
  const owner = await stat(dataDir);
  await writeFile(`${dataDir}.log`, '');
  await chown(`${dataDir}.log`, owner.uid, owner.gid);
  running.add(dataDir);
  installExitHook();
  const login = `User Id=babelfish_user;Password=${process.env.BABELFISH_PASSWORD ?? '12345678'}`;
  // With TLS the engine listens on 127.0.0.1 under the name a test certificate carries
  // (localhost); the readiness probe trusts any certificate, the returned string verifies.
  const url = options.tls
    ? `Server=localhost,${tdsPort};${login};Database=${DEMO_DATABASE}`
    : `Server=127.0.0.1,${tdsPort};${login};Encrypt=false;TrustServerCertificate=true;Database=${DEMO_DATABASE}`;
  const probe = options.tls ? `${url};TrustServerCertificate=true` : url;
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      await stopServer(dataDir);
      running.delete(dataDir);
      await rm(work, { recursive: true, force: true });
    })();
    return stopping;
  };
  try {
    await run(join(ENGINE_WORK, 'babelfish', 'start.sh'), [dataDir, String(tdsPort), String(pgPort)]);
    await connectable(probe, 30_000);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, port: tdsPort, stop };
}

/** A fresh demo database on the SQL Server of MSSQL_URL, dropped again by stop(). */
async function createOnServer(serverUrl: string): Promise<TsqlDemo> {
  const database = `svc_demo_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  await createDemoDatabase(serverUrl, database);
  let stopping: Promise<void> | undefined;
  return {
    url: withDatabase(serverUrl, database),
    stop() {
      stopping ??= (async () => {
        const server = createMssqlDatabase({ connectionString: serverUrl });
        try {
          await server.query(`DROP DATABASE IF EXISTS ${database}`);
        } catch (error) {
          console.warn(`could not drop demo database ${database}: ${(error as Error).message}`);
        } finally {
          await server.close();
        }
      })();
      return stopping;
    },
  };
}

/**
 * A T-SQL demo database of its own, from the same demo data every time: on the SQL Server of
 * MSSQL_URL (a new database, dropped by stop()), else on an engine started from TSQL_ENGINE_DIR.
 * With `options.engine` or `options.tls` always on an engine (what a test sets up in the server,
 * such as its certificate, only the engine lets it).
 */
export async function startTsqlDemo(options: TsqlDemoOptions = {}): Promise<TsqlDemo> {
  const serverUrl = process.env.MSSQL_URL;
  if (serverUrl && !options.engine && !options.tls) return createOnServer(serverUrl);
  if (!existsSync(join(tsqlEngineDir(), 'engine.sh'))) {
    throw new Error(
      `LOCAL_DATABASE=tsql needs MSSQL_URL or the T-SQL engine in ${tsqlEngineDir()} (set TSQL_ENGINE_DIR)`,
    );
  }
  return startEngineCopy(options);
}
