import { processWide } from './process-wide.js';

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
  /** How long a warm process remembers a table's or view's columns and key, in seconds (0: not at all). */
  readonly catalogueCacheSeconds: number;
  readonly s3ForcePathStyle: boolean;
}

/** One per process (see process-wide.ts): a reset reaches the packaged functions of the local stack too. */
const memory = processWide('settings', () => ({ settings: undefined as Settings | undefined }));

export class ConfigurationError extends Error {
  override readonly name = 'ConfigurationError';
}

/** Reads an integer environment variable, throwing with the variable's name when it is malformed. */
export function intFromEnv(name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = process.env[name];
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

export function getSettings(): Settings {
  memory.settings ??= Object.freeze({
    inlineLimitBytes: intFromEnv('INLINE_LIMIT_BYTES', 5 * 1024 * 1024, 1024, 6 * 1024 * 1024),
    largeResultBucket: process.env.LARGE_RESULT_BUCKET || undefined,
    presignSeconds: intFromEnv('PRESIGN_SECONDS', 900, 60, 7 * 24 * 3600),
    readBatchRows: intFromEnv('READ_BATCH_ROWS', 1000, 1, 10000),
    credentialCacheMs: intFromEnv('CREDENTIAL_CACHE_MS', 5 * 60 * 1000, 0, 24 * 3600 * 1000),
    catalogueCacheSeconds: intFromEnv('CATALOGUE_CACHE_SECONDS', 60, 0, 3600),
    s3ForcePathStyle: boolFromEnv('S3_FORCE_PATH_STYLE', false),
  });
  return memory.settings;
}

/** Forgets the settings so that a test can change the environment. */
export function resetSettings(): void {
  memory.settings = undefined;
}
