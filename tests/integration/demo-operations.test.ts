import type { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbeddedWebApiStore } from '../../shared/adapters/embedded/web-api-store.js';
import type { Database } from '../../shared/core/database.js';
import { OperationFailedError } from '../../shared/core/web-api/store.js';
import { demoDatabase } from '../support/demo.js';
import {
  checkConcurrentDocuments,
  checkDemoOperationsListed,
  checkDocumentCreated,
  checkDocumentRefusals,
  checkTransactionEnded,
  type DemoOperationsTarget,
} from '../support/demo-operations.js';

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
  it('lists both in WS_OPERATION', async () => {
    await checkDemoOperationsListed(target.storeOn(db));
  });

  it('2001 creates a DOKUMENT of its params and answers [{"id": <its ID>}]', async () => {
    await checkDocumentCreated(target);
  });

  it('2001 refuses bad or missing params in its own words, writing nothing', async () => {
    await checkDocumentRefusals(target);
  });

  it('2001 called at once by several calls takes a new ID for each', async () => {
    await checkConcurrentDocuments(target);
  });

  it('2002 cannot end the transaction it runs in: refused with 2D000, its DOKUMENT gone with the statement', async () => {
    await checkTransactionEnded(target, '2D000');
    // Outside a transaction too: a PostgreSQL function never ends one.
    const operation = (await target.storeOn(db).findOperation(2002))!;
    const alone = await target
      .storeOn(db)
      .callOperation(operation, [])
      .catch((e: unknown) => e);
    expect(alone).toBeInstanceOf(OperationFailedError);
    expect(((alone as Error).cause as { dbCode?: string }).dbCode).toBe('2D000');
  });
});
