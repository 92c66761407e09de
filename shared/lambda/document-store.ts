import { createEmbeddedDocumentStore } from '../adapters/embedded/document-store.js';
import { createMssqlDocumentStore } from '../adapters/mssql/document-store.js';
import { byDialect, openDatabase } from '../config/databases.js';
import type { TenantConfig } from '../config/tenants.js';
import type { DocumentStore } from '../core/files/document-store.js';

/** The tenant's document store: `SVCDOC` of its document database, the application database when it names none. */
export async function tenantDocumentStore(tenant: TenantConfig): Promise<DocumentStore> {
  return byDialect(await openDatabase(tenant.documentDatabase ?? tenant.database), {
    mssql: createMssqlDocumentStore,
    embedded: createEmbeddedDocumentStore,
  });
}
