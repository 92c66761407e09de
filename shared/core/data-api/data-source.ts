import type { DataSourceInfo } from '../database.js';

/** Port: the tables and views of a tenant database, looked up case-insensitively. */
export interface DataSourceCatalogue {
  /** Undefined when absent. */
  findDataSource(schema: string | undefined, name: string): Promise<DataSourceInfo | undefined>;
}

import { badRequest, notFound } from '../errors.js';
import { parseQualifiedName, type QualifiedName } from '../sql-names.js';

/** Objects the service never serves, whatever a tenant allows: they hold secrets. */
const NEVER_SERVED = new Set(['ws_application']);

/** Splits `NAME` or `schema.NAME`; anything that is not an identifier is a 400. */
export function parseDataSourceName(raw: string): QualifiedName {
  const name = parseQualifiedName(raw);
  if (!name) {
    throw badRequest(
      'invalid_data_source',
      `"${raw.slice(0, 140)}" is not a table or view name: use NAME or schema.NAME (letters, digits, _)`,
    );
  }
  return name;
}

export type AllowedDataSources = '*' | readonly string[];

interface CacheEntry {
  readonly info: DataSourceInfo | undefined;
  readonly expires: number;
}

const CATALOGUE_TTL_MS = 60_000;
const CATALOGUE_MAX_ENTRIES = 2000;
const catalogueCache = new WeakMap<DataSourceCatalogue, Map<string, CacheEntry>>();

/** Catalogue lookup remembered for a minute per warm process: schemas change rarely, requests often. */
async function lookUp(db: DataSourceCatalogue, name: QualifiedName): Promise<DataSourceInfo | undefined> {
  let cache = catalogueCache.get(db);
  if (!cache) {
    cache = new Map();
    catalogueCache.set(db, cache);
  }
  const key = `${name.schema ?? ''}.${name.name}`.toLowerCase();
  const now = Date.now();
  const hit = cache.get(key);
  if (hit && hit.expires > now) return hit.info;
  const info = await db.findDataSource(name.schema, name.name);
  if (cache.size >= CATALOGUE_MAX_ENTRIES) cache.clear();
  cache.set(key, { info, expires: now + CATALOGUE_TTL_MS });
  return info;
}

/**
 * Resolves a data source name of a request to the catalogue's object. Unknown, not allowed and
 * never-served objects all get the same 404, so that a caller cannot probe for what exists.
 */
export async function resolveDataSource(
  db: DataSourceCatalogue,
  raw: string,
  allowed: AllowedDataSources,
): Promise<DataSourceInfo> {
  const name = parseDataSourceName(raw);
  const missing = notFound(
    'data_source_not_found',
    `Table or view "${raw}" does not exist or is not available`,
  );
  if (NEVER_SERVED.has(name.name.toLowerCase())) throw missing;
  const info = await lookUp(db, name);
  if (!info || NEVER_SERVED.has(info.name.toLowerCase()) || !isAllowed(info, allowed)) throw missing;
  return info;
}

function isAllowed(info: DataSourceInfo, allowed: AllowedDataSources): boolean {
  if (allowed === '*') return true;
  const bare = info.name.toLowerCase();
  const qualified = `${info.schema}.${info.name}`.toLowerCase();
  return allowed.some((entry) => {
    const candidate = entry.toLowerCase();
    return candidate === bare || candidate === qualified;
  });
}
