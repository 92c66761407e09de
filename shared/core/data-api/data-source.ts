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

/**
 * Rule "internal tables are never served" (CONTRACT.md section 3): the service's own tables that
 * hold secrets or its internal state are 404 through the Data API like an unknown name, whatever a
 * tenant allows. A table is internal when it is listed here, or when it is one of the service's
 * (`WS_`, `WEBHOOK_` or `SVC_`) and its name ends in one of {@link INTERNAL_TABLE_SUFFIXES}: a new
 * guard, lease, lock, key, secret or state table is internal by its name alone. The audit trail
 * (`WS_JOURNAL`, `WEBHOOK_DELIVERY`), `WS_OPERATION` and `SVCDOC` stay readable.
 */
export const INTERNAL_TABLES: readonly string[] = [
  // API hashes, the keys of request signatures.
  'WS_APPLICATION',
  // The replay guard: digests of accepted requests.
  'WS_REPLAY_GUARD',
  // The webhook secret memory and endpoint state (issue 21).
  'WEBHOOK_SECRET',
  'WEBHOOK_ENDPOINT',
  // Which copy of a receipt event is sending it now (CONTRACT 6).
  'SVC_WEBHOOK_SENDING',
  // The change feed's state and the change tables beside recorded tables (CONTRACT 4b): served
  // only through getChanges.
  'SVC_CHANGE_FEED',
  // Change notifications' subscriptions (CONTRACT 4c): their secrets; served only to their owner
  // through the subscription routes.
  'SVC_SUBSCRIPTION',
  // Exactly once's keys (CONTRACT 5a): the recorded answers, a subscription's secret among them;
  // replayed only to the caller that sent the key.
  'SVC_IDEMPOTENCY',
];

/**
 * The service's records that a tenant reads through the Data API (its audit trail) and that
 * tenants sharing a database share: each row names its tenant in {@link TENANT_COLUMN}, and a
 * tenant reads, counts and pages its own rows only (CONTRACT 4c: every record the service keeps is
 * its tenant's). Where the column is missing (a database the scripts have not upgraded), the table
 * is not served at all rather than served whole.
 */
export const TENANT_SCOPED_TABLES: readonly string[] = [
  'WEBHOOK_DELIVERY',
  'SVC_NOTIFICATION_DELIVERY',
  // Whose call each WS_JOURNAL row is (the journal itself is the ERP's, shared as the ERP has it).
  'SVC_JOURNAL',
];
export const TENANT_COLUMN = 'TENANT';
const TENANT_SCOPED = new Set(TENANT_SCOPED_TABLES);

/** Name beginnings of the service's internal tables: the change tables `SVC_CHANGES_<TABLE>`. */
const INTERNAL_TABLE_PREFIXES: readonly string[] = ['SVC_CHANGES_'];

/** Name endings that make a table of the service's internal (see {@link INTERNAL_TABLES}). */
export const INTERNAL_TABLE_SUFFIXES: readonly string[] = [
  '_GUARD',
  '_LEASE',
  '_LEASES',
  '_LOCK',
  '_LOCKS',
  '_KEY',
  '_KEYS',
  '_SECRET',
  '_SECRETS',
  '_STATE',
];

const SERVICE_TABLE_PREFIXES = ['WS_', 'WEBHOOK_', 'SVC_'];
const INTERNAL_BY_NAME = new Set(INTERNAL_TABLES.map((name) => name.toUpperCase()));

/** Whether `name` (a bare table name, any case) is one of the service's internal tables. */
export function isInternalTable(name: string): boolean {
  const upper = name.toUpperCase();
  if (INTERNAL_BY_NAME.has(upper)) return true;
  if (INTERNAL_TABLE_PREFIXES.some((prefix) => upper.startsWith(prefix))) return true;
  return (
    SERVICE_TABLE_PREFIXES.some((prefix) => upper.startsWith(prefix)) &&
    INTERNAL_TABLE_SUFFIXES.some((suffix) => upper.endsWith(suffix))
  );
}

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
  /** The tenant reading: of a table tenants share, its own rows only. */
  tenant?: string,
): Promise<DataSourceInfo> {
  const name = parseDataSourceName(raw);
  const missing = notFound(
    'data_source_not_found',
    `Table or view "${raw}" does not exist or is not available`,
  );
  if (isInternalTable(name.name)) throw missing;
  const info = await db.findDataSource(name.schema, name.name);
  if (!info || isInternalTable(info.name) || !isAllowed(info, allowed)) throw missing;
  if (!isTenantScoped(info)) return info;
  const column = info.columns.find((c) => c.name.toUpperCase() === TENANT_COLUMN);
  if (!column || tenant === undefined) throw missing;
  return { ...info, rowScope: { column: column.name, value: tenant } };
}

/** Whether a source is one of the service's records that tenants sharing a database share. */
export function isTenantScoped(source: DataSourceName): boolean {
  return source.schema.toLowerCase() === 'dbo' && TENANT_SCOPED.has(source.name.toUpperCase());
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
    (name) => !isInternalTable(name.name) && isAllowed(name, allowed),
  );
  // One after another: a function instance holds one connection, and lookups queued on it at once
  // would each count their wait for it against the pool's acquire time-out (503 database_busy).
  const found: DataSourceInfo[] = [];
  for (const name of names) {
    const info = await db.findDataSource(name.schema, name.name);
    if (info) found.push(info);
  }
  return found;
}
