import { readFile } from 'node:fs/promises';
import type { PGlite } from '@electric-sql/pglite';
import { openDemoDatabase } from '../../infra/local/demo-database.js';
import { createEmbeddedDatabase } from '../../shared/adapters/embedded-sql/index.js';
import { parseTenantRegistry, setTenantRegistry } from '../../shared/config/tenants.js';
import type { Database } from '../../shared/core/database.js';

/** A private in-memory copy of the demo database for one test file. */
export async function demoDatabase(): Promise<{ pg: PGlite; db: Database }> {
  const pg = await openDemoDatabase();
  return { pg, db: createEmbeddedDatabase(pg) };
}

export const DEMO_AUTH = `Basic ${Buffer.from('demo:demo-password').toString('base64')}`;

type TenantEntry = Record<string, unknown>;

/**
 * Replaces the tenant registry of this process with the local stack's (infra/local/tenants.json)
 * plus the tenants `extra` derives from its demo tenant.
 */
export async function useDemoTenantsWith(
  extra: (demo: TenantEntry) => Record<string, TenantEntry>,
): Promise<void> {
  const local = JSON.parse(await readFile('infra/local/tenants.json', 'utf8')) as {
    tenants: Record<string, TenantEntry>;
  };
  setTenantRegistry(parseTenantRegistry({ tenants: { ...local.tenants, ...extra(local.tenants.demo!) } }));
}
