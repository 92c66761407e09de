import type { PGlite } from '@electric-sql/pglite';
import { openDemoDatabase } from '../../infra/local/demo-database.js';
import { createEmbeddedDatabase } from '../../shared/adapters/embedded-sql/index.js';
import type { Database } from '../../shared/core/database.js';

/** A private in-memory copy of the demo database for one test file. */
export async function demoDatabase(): Promise<{ pg: PGlite; db: Database }> {
  const pg = await openDemoDatabase();
  return { pg, db: createEmbeddedDatabase(pg) };
}

export const DEMO_AUTH = `Basic ${Buffer.from('demo:demo-password').toString('base64')}`;
