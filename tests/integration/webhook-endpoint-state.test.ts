import type { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe } from 'vitest';
import { createEmbeddedWebhookAdminStore } from '../../shared/adapters/embedded/webhook-admin-store.js';
import { createEmbeddedWebhookDeliveryLog } from '../../shared/adapters/embedded/webhook-delivery-log.js';
import type { Database } from '../../shared/core/database.js';
import type { WebhookDeliveryLog } from '../../shared/core/webhook/delivery-log.js';
import { demoDatabase } from '../support/demo.js';
import { endpointStateCases } from '../support/webhook-endpoint-state.js';
import { recoverClaimCases } from '../support/webhook-recover-claims.js';
import { sendingClaimCases } from '../support/webhook-sending-claims.js';

// The same cases on T-SQL: tests/integration/mssql-webhook-delivery-log.test.ts.
describe('Webhook endpoint state on the embedded database (integration)', () => {
  let pg: PGlite;
  let db: Database;
  let log: WebhookDeliveryLog;

  beforeAll(async () => {
    ({ pg, db } = await demoDatabase());
    log = createEmbeddedWebhookDeliveryLog(db, 'demo');
  });
  afterAll(async () => {
    await pg?.close();
  });

  endpointStateCases(() => ({ db, log }), 41);
  // One session: the claims interleave between their statements.
  sendingClaimCases(() => ({
    logs: (count) => Array.from({ length: count }, () => createEmbeddedWebhookDeliveryLog(db, 'demo')),
    other: createEmbeddedWebhookDeliveryLog(db, 'other'),
  }));
  // One session: the recovers interleave between their statements.
  recoverClaimCases(
    () => ({ db, log, stores: () => [1, 2, 3].map(() => createEmbeddedWebhookAdminStore(db, 'demo')) }),
    43,
  );
});
