import { createEmbeddedDocumentStore } from '../adapters/embedded/document-store.js';
import { createMssqlDocumentStore } from '../adapters/mssql/document-store.js';
import { byDialect, openDatabase } from '../config/databases.js';
import type { TenantConfig } from '../config/tenants.js';
import type { Database } from '../core/database.js';
import type { DocumentStore } from '../core/files/document-store.js';
import type { TraceContext } from '../core/trace-context.js';

/** The tenant's document database: its `documentDatabase`, the application database when it names none. */
export function tenantDocumentDatabase(tenant: TenantConfig, trace?: TraceContext): Promise<Database> {
  return openDatabase(tenant.documentDatabase ?? tenant.database, trace);
}

/** The document store of a database (`SVCDOC`), in its dialect. */
export function documentStoreOn(db: Database): DocumentStore {
  return byDialect(db, {
    mssql: (mssql) => createMssqlDocumentStore(mssql),
    embedded: (embedded) => createEmbeddedDocumentStore(embedded),
  });
}

/** The tenant's document store: `SVCDOC` of its document database, the application database when it names none. */
export async function tenantDocumentStore(
  tenant: TenantConfig,
  trace?: TraceContext,
): Promise<DocumentStore> {
  return documentStoreOn(await tenantDocumentDatabase(tenant, trace));
}
