import { parse as parseKeywords } from '@tediousjs/connection-string';
import sql from 'mssql';
import {
  DatabaseBusyError,
  DatabasePermissionError,
  DatabaseStatementError,
  DatabaseTlsError,
  DatabaseUnavailableError,
  StatementCancelledError,
} from '../../core/database.js';
import { atMost } from '../../core/time-limit.js';
import { ConnectionSecurityError, readConnectionSecurity, type SqlServerTls } from './connection-security.js';
import { BABELFISH_UNTRANSLATED } from './dialect.js';
import { missingGrant } from './service-grants.js';
import type { MssqlPoolLike } from './types.js';

export type { SqlServerTls } from './connection-security.js';

/** How long a cancelled statement may take to be acknowledged before its connection is closed. */
export const CANCEL_TIMEOUT_MS = 1000;

/**
 * The name the server shows for the service's sessions (`program_name` in `sys.dm_exec_sessions`),
 * unless the connection string gives its own (`Application Name=`, `App=`; `appName` in the URL
 * form): how a DBA counts them against the formula of docs/sql-server.md. The driver's own is `node-mssql`.
 */
export const APPLICATION_NAME = 'erp-integration-gateway';

/** `Application Name` (or `App`) of an ADO-style string, which the driver's parser skips. */
function applicationName(text: string): string | undefined {
  const keywords = parseKeywords(text);
  const name = keywords.get('application name') ?? keywords.get('app');
  return typeof name === 'string' && name.trim() !== '' ? name.trim() : undefined;
}

/** Drops undefined entries: the driver merges options over its defaults with Object.assign. */
function defined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, entry]) => entry !== undefined)) as T;
}

/** The URL form; its encryption keywords are read by connection-security.ts, as the ADO form's. */
function fromUrl(url: URL): sql.config {
  const query = url.searchParams;
  const integer = (key: string) => (query.has(key) ? Number.parseInt(query.get(key) ?? '', 10) : undefined);
  return defined({
    server: decodeURIComponent(url.hostname).replace(/^\[(.*)\]$/, '$1'),
    port: url.port ? Number(url.port) : undefined,
    user: decodeURIComponent(url.username) || undefined,
    password: decodeURIComponent(url.password) || undefined,
    database: decodeURIComponent(url.pathname.slice(1)) || undefined,
    connectionTimeout: integer('connectTimeout') ?? integer('connectionTimeout'),
    requestTimeout: integer('requestTimeout'),
    options: defined({
      instanceName: query.get('instanceName') ?? undefined,
      appName: query.get('appName') ?? undefined,
    }),
  });
}

/** What a refused cleartext login is recognised by in mapError. */
const CLEARTEXT_REFUSED = 'ECLEARTEXT';

/** The driver's connection, as far as the cleartext guard below reaches into it. */
interface NegotiatingConnection {
  performTlsNegotiation?: (...args: unknown[]) => Promise<void>;
  messageIo?: { tlsNegotiationComplete?: boolean };
  close(): void;
}

/**
 * tedious asks for encryption (`Encrypt=true`) but goes on in the clear, login included, when the
 * server's pre-login answer says that it does not support encryption: what any man in the middle
 * can answer. SQL Server always offers TLS (with a self-signed certificate at worst), so such an
 * answer is refused here, after the negotiation and before the login packet (user name and
 * password) is written. It reaches into the driver (tedious 19: `performTlsNegotiation`,
 * `messageIo.tlsNegotiationComplete`); where those are gone, no connection is made rather than one
 * that may be in the clear, and the TLS tests on the engine say so.
 */
export function refuseCleartextLogin(connection: NegotiatingConnection): void {
  const negotiate = connection.performTlsNegotiation;
  if (typeof negotiate !== 'function') {
    connection.close();
    throw Object.assign(new Error('the driver cannot be checked for an encrypted login'), {
      code: CLEARTEXT_REFUSED,
    });
  }
  connection.performTlsNegotiation = async function negotiateOrRefuse(this: NegotiatingConnection, ...args) {
    await negotiate.apply(this, args);
    if (this.messageIo?.tlsNegotiationComplete !== true) {
      throw Object.assign(new Error('the server does not offer encryption'), { code: CLEARTEXT_REFUSED });
    }
  };
}

/**
 * Parses a `mssql://user:pass@host:port/db?encrypt=true` URL or an ADO-style string, with the
 * tenant's TLS settings from the registry, into a driver config: encrypted and verified unless the
 * string says otherwise (connection-security.ts).
 */
export function parseConnectionString(connectionString: string, tls?: SqlServerTls): sql.config {
  const text = connectionString.trim();
  let config: sql.config;
  let security: ReturnType<typeof readConnectionSecurity>;
  try {
    if (/^(mssql|sqlserver):\/\//i.test(text)) config = fromUrl(new URL(text));
    else {
      config = sql.ConnectionPool.parseConnectionString(text);
      const appName = applicationName(text);
      if (appName) config.options = { ...config.options, appName };
    }
    security = readConnectionSecurity(text, tls);
  } catch (error) {
    // The driver's and URL's errors quote the input, password included; these here do not.
    const problem =
      error instanceof ConnectionSecurityError
        ? `: ${error.setting === 'tls' ? 'tls ' : ''}${error.message}`
        : '';
    throw new Error(`Invalid SQL Server connection string${problem}`);
  }
  // Wall-clock values round-trip through the UTC getters of Date, whatever the host's time zone.
  // No driver time-out unless the connection string sets one (the driver's default is 15 s): every
  // statement is bounded by the service's own limits instead (the gateway's through the invocation's
  // abort signal, the Web API's synchronous limit, the job worker's lease), which cancel it in the
  // server; a 15 s driver time-out would end a long read or operation early as "unreachable".
  // A cancel (TDS attention) that the server has not acknowledged within CANCEL_TIMEOUT_MS closes
  // the connection instead (the pool opens another): SQL Server acknowledges at once, Babelfish
  // only when the statement ends (docs/sql-server.md, "Verified where"), and the driver's default is 5 s.
  // Encryption: set here in full, not left to the driver's defaults (which have changed between
  // versions, and which mssql's parser derives from `Encrypt=` its own way: `optional` as true).
  return {
    ...config,
    requestTimeout: config.requestTimeout ?? 0,
    ...(security.encrypt === true && {
      beforeConnect: (connection) => refuseCleartextLogin(connection as unknown as NegotiatingConnection),
    }),
    options: {
      cancelTimeout: CANCEL_TIMEOUT_MS,
      appName: APPLICATION_NAME,
      ...config.options,
      useUTC: true,
      // tedious takes 'strict' (TDS 8.0); the types know only the boolean.
      encrypt: security.encrypt as boolean,
      trustServerCertificate: security.trustServerCertificate,
      ...(security.serverName !== undefined && { serverName: security.serverName }),
      // A CA given replaces Node's roots for this server: the tenant's PKI, nobody else's.
      ...(security.ca !== undefined && { cryptoCredentialsDetails: { ca: security.ca } }),
    },
  };
}

/** A SQL Server to connect to: the tenant connection's string and TLS settings. */
export interface SqlServerTarget {
  readonly connectionString: string;
  readonly tls?: SqlServerTls;
}

/** How many connections a pool may hold, how long a statement waits for one, how long one may idle. */
export interface ConnectionPoolSettings {
  /** The most connections open at once. */
  readonly maxConnections: number;
  /** How long a statement waits for a free connection (or for a new one to log in) before it fails. */
  readonly acquireTimeoutMs: number;
  /** A connection left unused this long is closed. */
  readonly idleTimeoutMs: number;
}

/**
 * Whose pools a statement takes its connection from. In Lambda a process is one instance of one
 * function: one owner, the process (`id` ''), with the function's settings. The local stack runs
 * every function in one process and names the instance each invocation stands for, so that each
 * has pools of its own, of its function's size, as in Lambda.
 */
export interface PoolOwner {
  readonly id: string;
  readonly settings: ConnectionPoolSettings;
}

/** Where no owner is given (tools, tests): the driver's own bound of 10, with the service's checks and time-outs. */
export const DEFAULT_POOL_SETTINGS: ConnectionPoolSettings = Object.freeze({
  maxConnections: 10,
  acquireTimeoutMs: 5000,
  idleTimeoutMs: 60_000,
});

const processOwner: PoolOwner = Object.freeze({ id: '', settings: DEFAULT_POOL_SETTINGS });

/**
 * The driver's pool options for `settings`. `fromConnectionString` is what a connection string's
 * `Max Pool Size` / `Min Pool Size` asked for: it may lower the bound, never raise it, and no
 * connection is kept open for its own sake.
 */
export function poolOptions(
  settings: ConnectionPoolSettings,
  fromConnectionString?: { readonly max?: unknown },
): Required<Pick<sql.config, 'pool' | 'validateConnection'>> {
  const asked = Number(fromConnectionString?.max);
  return {
    // A connection lent out is checked by the state of its socket, not by a `SELECT 1` round trip
    // before every statement (the driver's default, one more round trip per statement). A session
    // the server ended shows as a closed socket; one a network device dropped silently does not,
    // and fails its statement as unreachable (503) instead, after which the pool opens another.
    validateConnection: 'socket',
    pool: {
      min: 0,
      max:
        Number.isInteger(asked) && asked >= 1
          ? Math.min(asked, settings.maxConnections)
          : settings.maxConnections,
      acquireTimeoutMillis: settings.acquireTimeoutMs,
      idleTimeoutMillis: settings.idleTimeoutMs,
    },
  };
}

/** The driver's config of the pool for `target` with `settings`. */
export function poolConfig(target: SqlServerTarget, settings: ConnectionPoolSettings): sql.config {
  const config = parseConnectionString(target.connectionString, target.tls);
  return { ...config, ...poolOptions(settings, config.pool) };
}

/** What an acquire that failed saw, kept on its error for mapError. */
const ACQUIRE_FAILURE = Symbol('connection pool acquire failure');
interface AcquireFailure {
  /** Connections lent out when the wait ended. */
  readonly inUse: number;
  readonly maxConnections: number;
  readonly waitedMs: number;
}

/** The pool inside the driver's (tarn 3), as far as telling why an acquire failed reaches. */
interface DriverPoolInternals {
  on(event: 'acquireFail', listener: (eventId: number, error: unknown) => void): unknown;
  numUsed(): number;
}

/**
 * Notes on every failed acquire of `pool` how many of its connections were lent out at that moment:
 * a wait that ended with all of them busy is a full pool (DatabaseBusyError), any other a server
 * that did not give a connection in time (unreachable). Read when the wait ends, not later, when a
 * connection may have come free meanwhile. Where the driver's pool no longer has these, the
 * acquire time-out is still recognised, as unreachable.
 */
function noteAcquireFailures(pool: sql.ConnectionPool, options: sql.config['pool']): void {
  const inner = (pool as unknown as { pool?: Partial<DriverPoolInternals> }).pool;
  if (typeof inner?.on !== 'function' || typeof inner.numUsed !== 'function') return;
  const maxConnections = options?.max ?? DEFAULT_POOL_SETTINGS.maxConnections;
  const waitedMs = options?.acquireTimeoutMillis ?? DEFAULT_POOL_SETTINGS.acquireTimeoutMs;
  inner.on('acquireFail', (_eventId, error) => {
    if (!(error instanceof Error)) return;
    const failure: AcquireFailure = {
      inUse: (inner as DriverPoolInternals).numUsed(),
      maxConnections,
      waitedMs,
    };
    Object.defineProperty(error, ACQUIRE_FAILURE, { value: failure });
  });
}

/** One pool per connection string and TLS settings, and per owner. */
const targetKey = ({ connectionString, tls }: SqlServerTarget) =>
  JSON.stringify([connectionString, tls?.ca ?? null, tls?.serverName ?? null]);

const pools = new Map<string, Map<string, Promise<MssqlPoolLike>>>();

/**
 * Logins one process opens to one server at once. A Lambda instance opens one at a time anyway;
 * the local stack runs every instance in one process, and a cold burst there (fifty instances
 * logging in together) slowed every login past the acquire time-out: queued, each is quick.
 */
export const LOGINS_AT_ONCE = 4;

/** A queue of the logins to one server: at most LOGINS_AT_ONCE run, the others wait their turn. */
class LoginQueue {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  async run<T>(login: () => Promise<T>): Promise<T> {
    if (this.running >= LOGINS_AT_ONCE) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running++;
    try {
      return await login();
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }
}

const loginQueues = new Map<string, LoginQueue>();
/** The pools whose first connection is made. */
const connected = new WeakSet<Promise<MssqlPoolLike>>();

/**
 * `connecting` for at most `ms`: a statement waits for its pool's first connection (its turn to log
 * in, and the login) no longer than for any connection, the acquire time-out (503 then, as for a
 * pool that gives no connection). The login goes on for the next statement.
 */
function withinAcquireTimeout(connecting: Promise<MssqlPoolLike>, ms: number): Promise<MssqlPoolLike> {
  return atMost(connecting, ms, (): never => {
    throw new DatabaseUnavailableError(
      `SQL Server gave no connection within the acquire time-out (${ms} ms): its logins are slow or queued`,
    );
  });
}

/** The connected pool of `owner` for `target`, shared across invocations; connects on first use. */
export function sharedPool(target: SqlServerTarget, owner: PoolOwner = processOwner): Promise<MssqlPoolLike> {
  const key = targetKey(target);
  const owners = pools.get(key) ?? new Map<string, Promise<MssqlPoolLike>>();
  pools.set(key, owners);
  const cached = owners.get(owner.id);
  // A connected pool is answered as it is: no timer per statement.
  if (cached)
    return connected.has(cached) ? cached : withinAcquireTimeout(cached, owner.settings.acquireTimeoutMs);
  const config = poolConfig(target, owner.settings);
  const pool = new sql.ConnectionPool(config);
  // Failures reach callers through their requests; an 'error' event without a listener would crash.
  pool.on('error', () => undefined);
  const server = `${config.server}:${config.port ?? 1433}`;
  const queue = loginQueues.get(server) ?? new LoginQueue();
  loginQueues.set(server, queue);
  const connecting: Promise<MssqlPoolLike> = queue
    .run(() => pool.connect())
    .then(
      (connected) => {
        noteAcquireFailures(connected, config.pool);
        return connected;
      },
      (error: unknown) => {
        // A failed connection must not stay cached: the next call tries again.
        if (owners.get(owner.id) === connecting) owners.delete(owner.id);
        void pool.close().catch(() => undefined);
        throw error;
      },
    );
  owners.set(owner.id, connecting);
  // Also the rejection's handler: a caller that gave up waiting leaves the login to finish for the
  // next one, and a failed login then has nobody else awaiting it.
  connecting.then(() => connected.add(connecting)).catch(() => undefined);
  return withinAcquireTimeout(connecting, owner.settings.acquireTimeoutMs);
}

/** Closes and forgets every shared pool for `target` (every owner's), if any. */
export async function closeSharedPool(target: SqlServerTarget): Promise<void> {
  const key = targetKey(target);
  const owners = [...(pools.get(key)?.values() ?? [])];
  pools.delete(key);
  await Promise.all(
    owners.map(async (connecting) => {
      const pool = await connecting.catch(() => undefined);
      await pool?.close();
    }),
  );
}

const UNAVAILABLE_CODES = new Set([
  // The connection dropped under a statement (the server's session killed, the server restarted):
  // the statement's transaction is gone with it, as when the server is unreachable.
  'ECONNRESET',
  'EPIPE',
  'ESOCKET',
  'ETIMEOUT',
  'ELOGIN',
  'ECONNCLOSED',
  'ENOTOPEN',
  'EINSTLOOKUP',
]);

// The T-SQL engine of the development machines (Babelfish) passes some PostgreSQL errors through
// under one generic number; those the service acts on get SQL Server's number for the same
// failure, so that the answer is SQL Server's: a caller's condition overflowing, and a column or
// table gone since its columns were looked up. SQL Server itself never sends this number.
const SQL_SERVER_NUMBERS: readonly (readonly [RegExp, number])[] = [
  [/^numeric field overflow/i, 8115], // arithmetic overflow converting to numeric
  [/^column ".*" does not exist/i, 207], // invalid column name
  [/^relation ".*" does not exist/i, 208], // invalid object name
];

function sqlServerNumber(number: unknown, message: string): unknown {
  if (number !== BABELFISH_UNTRANSLATED) return number;
  return SQL_SERVER_NUMBERS.find(([pattern]) => pattern.test(message))?.[1] ?? number;
}

/**
 * The object and the grant a statement lacked, when the server refused it for a permission: SQL
 * Server's 229 (object) and 230 (column) name the permission, the object and its schema; the
 * T-SQL engine passes PostgreSQL's "permission denied for table svcdoc" through under its generic
 * number, the object's kind and name in lower case (docs/sql-server.md, "Permissions").
 */
function permissionDenied(number: unknown, message: string): { object: string; grant: string } | undefined {
  if (number === 229 || number === 230) {
    const named =
      /^The (.+?) permission was denied on the (?:column '[^']*' of the )?object '([^']*)', database '[^']*', schema '([^']*)'/.exec(
        message,
      );
    if (!named) return undefined;
    const [, permission, name, schema] = named;
    return missingGrant(`${schema}.${name}`, undefined, permission);
  }
  if (number === BABELFISH_UNTRANSLATED) {
    const named =
      /^permission denied for (table|view|procedure|function|sequence|relation) "?([^"\s]+)"?$/i.exec(
        message.trim(),
      );
    if (!named) return undefined;
    return missingGrant(named[2]!, named[1]!.toLowerCase(), undefined);
  }
  return undefined;
}

/**
 * What went wrong in a TLS handshake, by the codes of Node's TLS errors (OpenSSL's verification
 * results), the driver's and the cleartext guard's: fixed texts for the client's answer, since
 * the errors' own messages name hosts and ports.
 */
const TLS_PROBLEMS: Readonly<Record<string, string>> = {
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'certificate not trusted (unable to verify the first certificate)',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'certificate not trusted (unable to get local issuer certificate)',
  UNABLE_TO_GET_ISSUER_CERT: 'certificate not trusted (unable to get issuer certificate)',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'certificate not trusted (self-signed certificate)',
  SELF_SIGNED_CERT_IN_CHAIN: 'certificate not trusted (self-signed certificate in certificate chain)',
  CERT_UNTRUSTED: 'certificate not trusted',
  INVALID_CA: 'certificate not trusted (invalid CA certificate)',
  CERT_SIGNATURE_FAILURE: 'certificate not trusted (certificate signature failure)',
  CERT_REJECTED: 'certificate rejected',
  CERT_REVOKED: 'certificate revoked',
  CERT_HAS_EXPIRED: 'certificate expired',
  CERT_NOT_YET_VALID: 'certificate not yet valid',
  INVALID_PURPOSE: 'certificate not meant for a TLS server (unsupported certificate purpose)',
  ERR_TLS_CERT_ALTNAME_INVALID:
    "certificate does not name the server (the name to verify is not among the certificate's names)",
  // tedious: the server's pre-login answer requires encryption, the client's settings turn it off.
  EENCRYPT: 'the server requires encryption, which the connection string turns off (Encrypt=false)',
  [CLEARTEXT_REFUSED]: 'the server does not offer encryption, which the connection string requires',
};

/** The error and what it wraps: `cause`, mssql's `originalError`, an AggregateError's `errors`. */
function* errorChain(error: unknown, depth = 0): Generator<Error & { code?: unknown }> {
  if (!(error instanceof Error) || depth > 8) return;
  yield error;
  yield* errorChain((error as { originalError?: unknown }).originalError, depth + 1);
  yield* errorChain(error.cause, depth + 1);
  if (error instanceof AggregateError) for (const inner of error.errors) yield* errorChain(inner, depth + 1);
}

/** The failed handshake's problem, when a connection failed in one; undefined otherwise. */
function tlsProblem(error: unknown): string | undefined {
  for (const link of errorChain(error)) {
    const code = typeof link.code === 'string' ? link.code : '';
    const known = TLS_PROBLEMS[code];
    if (known) return known;
    // Other certificate checks (OpenSSL's X509_V_ERR names): the name, in words.
    if (/CERT|CRL|_CA$|ISSUER|PATH_LENGTH/.test(code) && /^[A-Z0-9_]+$/.test(code)) {
      return `certificate not accepted (${code.toLowerCase().replaceAll('_', ' ')})`;
    }
    // OpenSSL's own failures and alerts (protocol version, no shared cipher…), in words.
    if (/^ERR_SSL_[A-Z0-9_]+$/.test(code)) {
      return `handshake failed (${code.slice('ERR_SSL_'.length).toLowerCase().replaceAll('_', ' ')})`;
    }
    // Node's TLS socket: the server hung up mid-handshake (a protocol it does not speak, say TDS 8.0).
    if (/before secure TLS connection was established/.test(link.message)) {
      return 'the server closed the connection during the handshake';
    }
  }
  return undefined;
}

/** The code of the error under a driver's error (a socket's, say), or its `number` when that is a code. */
function lowerCode(error: Error): string | undefined {
  const number = (error as { number?: unknown }).number;
  if (typeof number === 'string') return number;
  const original = (error as { originalError?: unknown }).originalError ?? error.cause;
  const code = (original as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Maps driver errors onto the port's errors; anything else is returned unchanged. */
export function mapError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  if (
    error instanceof DatabaseUnavailableError ||
    error instanceof DatabaseStatementError ||
    error instanceof DatabasePermissionError ||
    error instanceof StatementCancelledError
  ) {
    return error;
  }
  const code = 'code' in error && typeof error.code === 'string' ? error.code : undefined;
  // The pool's acquire time-out (tarn's TimeoutError: no code, and its name is plain "Error"; the
  // driver puts this in front of its message). A login that failed meanwhile comes as its own
  // ConnectionError instead, with its code, and is mapped below.
  if (code === undefined && error.message.startsWith('Failed to acquire a connection from the pool')) {
    const failure = (error as { [ACQUIRE_FAILURE]?: AcquireFailure })[ACQUIRE_FAILURE];
    if (failure && failure.inUse >= failure.maxConnections) {
      return new DatabaseBusyError(failure.maxConnections, failure.waitedMs, { cause: error });
    }
    return new DatabaseUnavailableError(
      'SQL Server is unavailable (no connection within the acquire time-out)',
      {
        cause: error,
      },
    );
  }
  if (
    error instanceof sql.ConnectionError ||
    UNAVAILABLE_CODES.has(code ?? '') ||
    UNAVAILABLE_CODES.has(lowerCode(error) ?? '') ||
    error.name === 'TimeoutError'
  ) {
    // The driver's message may name the host, user or instance: keep it in `cause` only.
    const problem = tlsProblem(error);
    if (problem) return new DatabaseTlsError(problem, { cause: error });
    return new DatabaseUnavailableError(`SQL Server is unavailable${code ? ` (${code})` : ''}`, {
      cause: error,
    });
  }
  if (error instanceof sql.RequestError || error instanceof sql.TransactionError) {
    const number = 'number' in error ? error.number : undefined;
    const denied = permissionDenied(number, error.message);
    if (denied) {
      return new DatabasePermissionError(denied.object, denied.grant, String(number), { cause: error });
    }
    return new DatabaseStatementError(error.message, String(sqlServerNumber(number, error.message) ?? code), {
      cause: error,
    });
  }
  return error;
}
