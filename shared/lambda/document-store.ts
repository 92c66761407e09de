import { openDatabase } from '../config/databases.js';
import type { TenantConfig } from '../config/tenants.js';
import type { DocumentStore } from '../core/files/document-store.js';
import { createSqlDocumentStore } from '../core/files/sql-document-store.js';

/** The tenant's document store: `SVCDOC` of its document database, the application database when it names none. */
export async function tenantDocumentStore(tenant: TenantConfig): Promise<DocumentStore> {
  return createSqlDocumentStore(await openDatabase(tenant.documentDatabase ?? tenant.database));
}
