import type { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbeddedWebApiStore } from '../../shared/adapters/embedded/web-api-store.js';
import type { Database } from '../../shared/core/database.js';
import { OperationFailedError } from '../../shared/core/web-api/store.js';
import { demoDatabase } from '../support/demo.js';
import { type DemoOperationsTarget, demoOperationTests } from '../support/demo-operations.js';

// The demo's operations of CONTRACT 5a on the embedded database (their T-SQL twins:
// mssql-demo-operations.test.ts), through the Web API store as the service calls them.
let pg: PGlite;
let db: Database;
let target: DemoOperationsTarget;

beforeAll(async () => {
  ({ pg, db } = await demoDatabase());
  target = { db, storeOn: (connection) => createEmbeddedWebApiStore(connection, 'demo') };
});
afterAll(async () => {
  await pg?.close();
});

describe('The demo operations 2001 and 2002 on the embedded database', () => {
  // 2D000, invalid transaction termination: a PostgreSQL function cannot end a transaction.
  demoOperationTests(() => target, '2D000');

  it('2002 is refused outside a transaction too: a PostgreSQL function never ends one', async () => {
    const store = target.storeOn(db);
    const alone = await store.callOperation((await store.findOperation(2002))!, []).catch((e: unknown) => e);
    expect(alone).toBeInstanceOf(OperationFailedError);
    expect(((alone as Error).cause as { dbCode?: string }).dbCode).toBe('2D000');
  });
});
