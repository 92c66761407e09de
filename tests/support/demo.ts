import type { PGlite } from '@electric-sql/pglite';
import { openDemoDatabase } from '../../infra/local/demo-database.js';
import { createEmbeddedDatabase } from '../../shared/adapters/embedded/index.js';
import { setTenantRegistry } from '../../shared/config/tenant-registry.js';
import { parseTenantRegistry } from '../../shared/config/tenants.js';
import type { Database } from '../../shared/core/database.js';

/** A private in-memory copy of the demo database for one test file. */
export async function demoDatabase(): Promise<{ pg: PGlite; db: Database }> {
  const pg = await openDemoDatabase();
  return { pg, db: createEmbeddedDatabase(pg) };
}

export const DEMO_AUTH = `Basic ${Buffer.from('demo:demo-password').toString('base64')}`;

type TenantEntry = Record<string, unknown>;

/**
 * Replaces the tenant registry of this process with the local stack's (`stack.registry`: the demo
 * tenant on the stack's database, embedded or T-SQL) plus the tenants `extra` derives from its
 * demo tenant.
 */
export function useDemoTenantsWith(
  registry: unknown,
  extra: (demo: TenantEntry) => Record<string, TenantEntry>,
): void {
  // The stack's registry as it is (its signing key included), with the extra tenants.
  const local = registry as { tenants: Record<string, TenantEntry> };
  setTenantRegistry(
    parseTenantRegistry({ ...local, tenants: { ...local.tenants, ...extra(local.tenants.demo!) } }),
  );
}

/**
 * A tagged template that runs one statement on `database` in either dialect: identifiers quoted
 * `"NAME"` (T-SQL accepts that too, with QUOTED_IDENTIFIER ON as the driver sets it), every
 * interpolated value sent as a parameter.
 */
export function sqlOn(database: Pick<Database, 'query' | 'dialect'>) {
  return (strings: TemplateStringsArray, ...values: unknown[]) =>
    database.query(
      strings.reduce((sql, part, index) => `${sql}${database.dialect.param(index)}${part}`),
      values,
    );
}
