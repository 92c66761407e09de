import { createEmbeddedWebApiStore } from '../../adapters/embedded-sql/web-api-store.js';
import { createMssqlWebApiStore } from '../../adapters/mssql/web-api-store.js';
import { byDialect } from '../../config/databases.js';
import { getWebApiJobSettings } from '../../config/web-api.js';
import type { Database } from '../../core/database.js';
import { WebApiLookupCache, withLookupCache } from '../../core/web-api/lookup-cache.js';
import type { WebApiStore } from '../../core/web-api/store.js';

// One cache per tenant database, for as long as the process (a warm Lambda) lives.
const caches = new WeakMap<Database, WebApiLookupCache>();

/**
 * The Web API store of a tenant database, in its dialect, its application and operation lookups
 * cached for `WEB_API_CACHE_SECONDS`.
 */
export function tenantWebApiStore(db: Database): WebApiStore {
  const ttlMs = getWebApiJobSettings().lookupCacheSeconds * 1000;
  let cache = caches.get(db);
  if (cache?.ttlMs !== ttlMs) {
    cache = new WebApiLookupCache(ttlMs);
    caches.set(db, cache);
  }
  const store = byDialect(db, { mssql: createMssqlWebApiStore, postgres: createEmbeddedWebApiStore });
  return withLookupCache(store, cache);
}
