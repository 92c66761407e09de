import { processWide } from '../core/process-wide.js';

/**
 * Process-wide settings, read once from the environment. A bad value fails at start with the
 * setting's name, never later in a request.
 */
export interface Settings {
  /** Answers larger than this many bytes go to S3 behind a 303. */
  readonly inlineLimitBytes: number;
  /** Bucket for large answers; undefined where no bucket is configured (large answers then fail). */
  readonly largeResultBucket: string | undefined;
  /** Lifetime of presigned URLs in seconds. */
  readonly presignSeconds: number;
  /** Rows read from the database per batch when writing a large answer. */
  readonly readBatchRows: number;
  /** How long a verified Basic credential is remembered in a warm process, in ms. */
  readonly credentialCacheMs: number;
  /** `TENANT_REGISTRY_MAX_AGE_SECONDS`: how old the registry in memory may get before it is read again. */
  readonly tenantRegistryMaxAgeSeconds: number;
  /** How long a warm process remembers a table's or view's columns and key, in seconds (0: not at all). */
  readonly catalogueCacheSeconds: number;
  readonly s3ForcePathStyle: boolean;
  /** The connections this process may hold to each SQL Server database (docs/sql-server.md "Connections to SQL Server"). */
  readonly databasePool: DatabasePoolSettings;
  /** Fair share between tenants (CONTRACT.md section 2, docs/operations.md "Fair share between tenants"). */
  readonly tenantLimits: TenantLimitSettings;
  /**
   * `PUBLIC_BASE_URL`: the service's address as its clients call it (`https://api.example.com`),
   * before `/{tenant}`: the gateway's tokens' `iss` and `aud`, and the token URL it describes.
   * Unset: the request's own (`x-forwarded-proto` and `host`, which HTTP API sets).
   */
  readonly publicBaseUrl: string | undefined;
}

/** `PUBLIC_BASE_URL`, checked: an http(s) URL without path, query or credentials. */
function publicBaseUrlFromEnv(): string | undefined {
  const raw = process.env.PUBLIC_BASE_URL?.trim();
  if (!raw) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigurationError(
      `PUBLIC_BASE_URL must be a URL such as https://api.example.com, got "${raw}"`,
    );
  }
  if (!/^https?:$/.test(url.protocol) || url.username || url.password || url.search || url.hash) {
    throw new ConfigurationError(
      `PUBLIC_BASE_URL must be an http(s) URL without credentials or query, got "${raw}"`,
    );
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

/** The per-tenant limits' defaults and where the counts are kept. */
export interface TenantLimitSettings {
  /** `TENANT_CONCURRENT_REQUESTS` (8) and `TENANT_REQUESTS_PER_SECOND` (50): a tenant's share unless the registry says otherwise. */
  readonly defaults: { readonly concurrentRequests: number; readonly requestsPerSecond: number };
  /** `TENANT_LIMITS_TABLE`: the DynamoDB table every instance counts in; unset, each process counts alone. */
  readonly table: string | undefined;
  /** `TENANT_LIMITS_TIMEOUT_MS` (100): how long one call to the table may take before the request goes on uncounted. */
  readonly timeoutMs: number;
  /**
   * `REQUEST_FUNCTION_CONCURRENCY`: each HTTP function's reserved concurrency, where the deployment
   * says it; a tenant's `concurrentRequests` must stay below it (the registry is checked).
   */
  readonly functionConcurrency: number | undefined;
}

/**
 * One pool of SQL Server connections per connection string and process. In Lambda a process is one
 * instance of one function, so the most sessions a tenant's server sees from a function is its
 * concurrency times `maxConnections`; serverless.yml sets the three per function.
 */
export interface DatabasePoolSettings {
  /**
   * The most connections open at once (`DB_POOL_MAX`). A function holds one per statement in
   * flight: a request function one (`getData` two), a queue worker one per record of its batch.
   * Unset: 10, the driver's own default, for the tools and tests that set nothing.
   */
  readonly maxConnections: number;
  /**
   * How long a statement waits for a free connection, or for a new one to log in, before it
   * fails (`DB_POOL_ACQUIRE_TIMEOUT_MS`): every connection busy is a 503 saying so, with
   * `Retry-After`; a login that takes this long, the server unreachable.
   */
  readonly acquireTimeoutMs: number;
  /** A connection left unused this long is closed (`DB_POOL_IDLE_TIMEOUT_MS`). */
  readonly idleTimeoutMs: number;
}

/** One per process (see process-wide.ts): a reset reaches the packaged functions of the local stack too. */
const memory = processWide('settings', () => ({ settings: undefined as Settings | undefined }));

export class ConfigurationError extends Error {
  override readonly name = 'ConfigurationError';
}

/** An environment: the process's, or one read from elsewhere (the local stack reads serverless.yml's). */
export type Environment = Readonly<Record<string, string | undefined>>;

/** Reads an integer environment variable, throwing with the variable's name when it is malformed. */
export function intFromEnv(
  name: string,
  fallback: number,
  min = 0,
  max = Number.MAX_SAFE_INTEGER,
  env: Environment = process.env,
): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigurationError(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  }
  return value;
}

/** Reads a boolean environment variable (`true`/`false`/`1`/`0`). */
export function boolFromEnv(name: string, fallback: boolean): boolean {
  const raw = process.env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigurationError(`${name} must be true or false, got "${process.env[name]}"`);
}

/** The pool settings of `DB_POOL_MAX`, `DB_POOL_ACQUIRE_TIMEOUT_MS` and `DB_POOL_IDLE_TIMEOUT_MS`. */
export function databasePoolFromEnv(env: Environment = process.env): DatabasePoolSettings {
  return Object.freeze({
    maxConnections: intFromEnv('DB_POOL_MAX', 10, 1, 100, env),
    // Below the HTTP API's 30 s, so that a request that cannot get a connection is answered.
    acquireTimeoutMs: intFromEnv('DB_POOL_ACQUIRE_TIMEOUT_MS', 5000, 100, 25_000, env),
    idleTimeoutMs: intFromEnv('DB_POOL_IDLE_TIMEOUT_MS', 60_000, 1000, 3600 * 1000, env),
  });
}

/** The settings of fair share between tenants, from the environment. */
export function tenantLimitsFromEnv(env: Environment = process.env): TenantLimitSettings {
  const capacity = env.REQUEST_FUNCTION_CONCURRENCY;
  return Object.freeze({
    defaults: Object.freeze({
      concurrentRequests: intFromEnv('TENANT_CONCURRENT_REQUESTS', 8, 1, 1000, env),
      requestsPerSecond: intFromEnv('TENANT_REQUESTS_PER_SECOND', 50, 1, 10_000, env),
    }),
    table: env.TENANT_LIMITS_TABLE || undefined,
    timeoutMs: intFromEnv('TENANT_LIMITS_TIMEOUT_MS', 100, 10, 5000, env),
    functionConcurrency:
      capacity === undefined || capacity.trim() === ''
        ? undefined
        : intFromEnv('REQUEST_FUNCTION_CONCURRENCY', 10, 1, 1000, env),
  });
}

export function getSettings(): Settings {
  memory.settings ??= Object.freeze({
    inlineLimitBytes: intFromEnv('INLINE_LIMIT_BYTES', 5 * 1024 * 1024, 1024, 6 * 1024 * 1024),
    largeResultBucket: process.env.LARGE_RESULT_BUCKET || undefined,
    presignSeconds: intFromEnv('PRESIGN_SECONDS', 900, 60, 7 * 24 * 3600),
    readBatchRows: intFromEnv('READ_BATCH_ROWS', 1000, 1, 10000),
    credentialCacheMs: intFromEnv('CREDENTIAL_CACHE_MS', 5 * 60 * 1000, 0, 24 * 3600 * 1000),
    tenantRegistryMaxAgeSeconds: intFromEnv('TENANT_REGISTRY_MAX_AGE_SECONDS', 60, 0, 3600),
    catalogueCacheSeconds: intFromEnv('CATALOGUE_CACHE_SECONDS', 60, 0, 3600),
    s3ForcePathStyle: boolFromEnv('S3_FORCE_PATH_STYLE', false),
    databasePool: databasePoolFromEnv(),
    tenantLimits: tenantLimitsFromEnv(),
    publicBaseUrl: publicBaseUrlFromEnv(),
  });
  return memory.settings;
}

/** Forgets the settings so that a test can change the environment. */
export function resetSettings(): void {
  memory.settings = undefined;
}
