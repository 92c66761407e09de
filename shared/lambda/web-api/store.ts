import { createEmbeddedWebApiStore } from '../../adapters/embedded-sql/web-api-store.js';
import { createMssqlWebApiStore } from '../../adapters/mssql/web-api-store.js';
import { byDialect } from '../../config/databases.js';
import type { Database } from '../../core/database.js';
import type { WebApiStore } from '../../core/web-api/store.js';

/** The Web API store of a tenant database, in its dialect. */
export function tenantWebApiStore(db: Database): WebApiStore {
  return byDialect(db, { mssql: createMssqlWebApiStore, postgres: createEmbeddedWebApiStore });
}
