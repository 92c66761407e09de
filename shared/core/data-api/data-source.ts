import type { DataSourceInfo, DataSourceName } from '../database.js';

/** Port: the tables and views of a tenant database, looked up case-insensitively. */
export interface DataSourceCatalogue {
  /** Undefined when absent. */
  findDataSource(schema: string | undefined, name: string): Promise<DataSourceInfo | undefined>;
  /** Every table and view, by schema and name. */
  listDataSources(): Promise<DataSourceName[]>;
  /**
   * Where lookups are remembered ({@link rememberedCatalogue}): forgets the one of this name, as
   * asked; true when there was one to forget.
   */
  forgetDataSource?(schema: string | undefined, name: string): boolean;
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
  readonly info: Promise<DataSourceInfo | undefined>;
  readonly expires: number;
}

const CATALOGUE_MAX_ENTRIES = 2000;

/**
 * The catalogue lookup remembered for `ttlMs` in a warm process: schemas change rarely, requests
 * often, and each lookup is a catalogue query (three on PostgreSQL) before the read itself. A name
 * that was not found is not remembered, so a new table or view is served at once; at most 2,000
 * names are kept. Concurrent requests for one name share one lookup, and a failed lookup is not
 * remembered. `ttlMs` 0 looks up every time.
 */
export function rememberedCatalogue(catalogue: DataSourceCatalogue, ttlMs: number): DataSourceCatalogue {
  if (ttlMs <= 0) return catalogue;
  const cache = new Map<string, CacheEntry>();
  const keyOf = (schema: string | undefined, name: string) => `${schema ?? ''}.${name}`.toLowerCase();
  return {
    listDataSources: () => catalogue.listDataSources(),
    forgetDataSource: (schema, name) => cache.delete(keyOf(schema, name)),
    findDataSource(schema, name) {
      const key = keyOf(schema, name);
      const now = Date.now();
      const hit = cache.get(key);
      if (hit && hit.expires > now) return hit.info;
      if (cache.size >= CATALOGUE_MAX_ENTRIES) cache.clear();
      const info = catalogue.findDataSource(schema, name);
      const entry = { info, expires: now + ttlMs };
      cache.set(key, entry);
      const forget = () => {
        if (cache.get(key) === entry) cache.delete(key);
      };
      info.then((found) => found ?? forget(), forget);
      return info;
    },
  };
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
  const info = await db.findDataSource(name.schema, name.name);
  if (!info || NEVER_SERVED.has(info.name.toLowerCase()) || !isAllowed(info, allowed)) throw missing;
  return info;
}

function isAllowed(info: DataSourceName, allowed: AllowedDataSources): boolean {
  if (allowed === '*') return true;
  const bare = info.name.toLowerCase();
  const qualified = `${info.schema}.${info.name}`.toLowerCase();
  return allowed.some((entry) => {
    const candidate = entry.toLowerCase();
    return candidate === bare || candidate === qualified;
  });
}

/**
 * Every data source a tenant may read, looked up in the catalogue, in schema and name order:
 * those it allows, never the ones never served. One that vanishes between the list and its
 * lookup is left out.
 */
export async function servedDataSources(
  db: DataSourceCatalogue,
  allowed: AllowedDataSources,
): Promise<DataSourceInfo[]> {
  const names = (await db.listDataSources()).filter(
    (name) => !NEVER_SERVED.has(name.name.toLowerCase()) && isAllowed(name, allowed),
  );
  const found = await Promise.all(names.map((name) => db.findDataSource(name.schema, name.name)));
  return found.filter((info): info is DataSourceInfo => info !== undefined);
}
