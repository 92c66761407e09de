import { createEmbeddedWebApiStore } from '../../adapters/embedded/web-api-store.js';
import { createMssqlWebApiStore } from '../../adapters/mssql/web-api-store.js';
import { byDialect } from '../../config/databases.js';
import type { TenantConfig } from '../../config/tenants.js';
import { getWebApiJobSettings } from '../../config/web-api.js';
import type { Database } from '../../core/database.js';
import { findRegisteredApplication } from '../../core/web-api/applications.js';
import { WebApiLookupCache, withLookupCache } from '../../core/web-api/lookup-cache.js';
import type { WebApiStore } from '../../core/web-api/store.js';

// One cache per tenant database, for as long as the process (a warm Lambda) lives.
const caches = new WeakMap<Database, WebApiLookupCache>();

/**
 * The Web API store of a tenant database, in its dialect, its operation lookups cached for
 * `WEB_API_CACHE_SECONDS`. Its applications are the tenant's registry entry's (CONTRACT.md section
 * 2), found in memory: a change counts with the registry's next read, as a Data API password's
 * does. A tenant that names the ERP's register instead (`{"erpTable": "dbo.WS_APPLICATION"}`) has
 * them read from there, and remembered as its operations are.
 */
export function tenantWebApiStore(db: Database, tenant: Pick<TenantConfig, 'id' | 'webApi'>): WebApiStore {
  const ttlMs = getWebApiJobSettings().lookupCacheSeconds * 1000;
  let cache = caches.get(db);
  if (cache?.ttlMs !== ttlMs) {
    cache = new WebApiLookupCache(ttlMs);
    caches.set(db, cache);
  }
  const store = byDialect(db, {
    mssql: (mssql) => createMssqlWebApiStore(mssql, tenant.id),
    embedded: (embedded) => createEmbeddedWebApiStore(embedded, tenant.id),
  });
  const cached = withLookupCache(store, cache);
  const { applications } = tenant.webApi;
  if (!Array.isArray(applications)) return cached;
  return { ...cached, findApplication: async (apiKey) => findRegisteredApplication(applications, apiKey) };
}
