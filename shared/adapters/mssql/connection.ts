import sql from 'mssql';
import {
  DatabaseStatementError,
  DatabaseUnavailableError,
  StatementCancelledError,
} from '../../core/database.js';
import type { MssqlPoolLike } from './types.js';

/** How long a cancelled statement may take to be acknowledged before its connection is closed. */
export const CANCEL_TIMEOUT_MS = 1000;

/** Drops undefined entries: the driver merges options over its defaults with Object.assign. */
function defined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, entry]) => entry !== undefined)) as T;
}

function fromUrl(url: URL): sql.config {
  const query = url.searchParams;
  const flag = (key: string) => (query.has(key) ? /^(true|yes|1)$/i.test(query.get(key) ?? '') : undefined);
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
      encrypt: flag('encrypt'),
      trustServerCertificate: flag('trustServerCertificate'),
      instanceName: query.get('instanceName') ?? undefined,
      appName: query.get('appName') ?? undefined,
    }),
  });
}

/** Parses a `mssql://user:pass@host:port/db?encrypt=true` URL or an ADO-style string into a driver config. */
export function parseConnectionString(connectionString: string): sql.config {
  const text = connectionString.trim();
  let config: sql.config;
  try {
    config = /^(mssql|sqlserver):\/\//i.test(text)
      ? fromUrl(new URL(text))
      : sql.ConnectionPool.parseConnectionString(text);
  } catch {
    // The driver's and URL's errors quote the input, password included.
    throw new Error('Invalid SQL Server connection string');
  }
  // Wall-clock values round-trip through the UTC getters of Date, whatever the host's time zone.
  // No driver time-out unless the connection string sets one (the driver's default is 15 s): every
  // statement is bounded by the service's own limits instead (the gateway's through the invocation's
  // abort signal, the Web API's synchronous limit, the job worker's lease), which cancel it in the
  // server; a 15 s driver time-out would end a long read or operation early as "unreachable".
  // A cancel (TDS attention) that the server has not acknowledged within CANCEL_TIMEOUT_MS closes
  // the connection instead (the pool opens another): SQL Server acknowledges at once, Babelfish
  // only when the statement ends (README, "Verified where"), and the driver's default is 5 s.
  return {
    ...config,
    requestTimeout: config.requestTimeout ?? 0,
    options: { cancelTimeout: CANCEL_TIMEOUT_MS, ...config.options, useUTC: true },
  };
}

const pools = new Map<string, Promise<MssqlPoolLike>>();

/** The connected pool for `connectionString`, shared across invocations; connects on first use. */
export function sharedPool(connectionString: string): Promise<MssqlPoolLike> {
  const cached = pools.get(connectionString);
  if (cached) return cached;
  const pool = new sql.ConnectionPool(parseConnectionString(connectionString));
  // Failures reach callers through their requests; an 'error' event without a listener would crash.
  pool.on('error', () => undefined);
  const connecting: Promise<MssqlPoolLike> = pool.connect().catch((error: unknown) => {
    // A failed connection must not stay cached: the next call tries again.
    if (pools.get(connectionString) === connecting) pools.delete(connectionString);
    void pool.close().catch(() => undefined);
    throw error;
  });
  pools.set(connectionString, connecting);
  return connecting;
}

/** Closes and forgets the shared pool for `connectionString`, if any. */
export async function closeSharedPool(connectionString: string): Promise<void> {
  const connecting = pools.get(connectionString);
  pools.delete(connectionString);
  const pool = await connecting?.catch(() => undefined);
  await pool?.close();
}

const UNAVAILABLE_CODES = new Set([
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
const BABELFISH_UNTRANSLATED = 33557097;
const SQL_SERVER_NUMBERS: readonly (readonly [RegExp, number])[] = [
  [/^numeric field overflow/i, 8115], // arithmetic overflow converting to numeric
  [/^column ".*" does not exist/i, 207], // invalid column name
  [/^relation ".*" does not exist/i, 208], // invalid object name
];

function sqlServerNumber(number: unknown, message: string): unknown {
  if (number !== BABELFISH_UNTRANSLATED) return number;
  return SQL_SERVER_NUMBERS.find(([pattern]) => pattern.test(message))?.[1] ?? number;
}

/** Maps driver errors onto the port's errors; anything else is returned unchanged. */
export function mapError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  if (
    error instanceof DatabaseUnavailableError ||
    error instanceof DatabaseStatementError ||
    error instanceof StatementCancelledError
  ) {
    return error;
  }
  const code = 'code' in error && typeof error.code === 'string' ? error.code : undefined;
  // tarn's pool-acquire timeout carries no code, only its name.
  if (
    error instanceof sql.ConnectionError ||
    UNAVAILABLE_CODES.has(code ?? '') ||
    error.name === 'TimeoutError'
  ) {
    // The driver's message may name the host, user or instance: keep it in `cause` only.
    return new DatabaseUnavailableError(`SQL Server is unavailable${code ? ` (${code})` : ''}`, {
      cause: error,
    });
  }
  if (error instanceof sql.RequestError || error instanceof sql.TransactionError) {
    const number = 'number' in error ? error.number : undefined;
    return new DatabaseStatementError(error.message, String(sqlServerNumber(number, error.message) ?? code), {
      cause: error,
    });
  }
  return error;
}
