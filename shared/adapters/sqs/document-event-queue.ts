import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DocumentEventQueue } from '../../core/webhook/admin.js';
import { documentReceivedMessage } from '../../core/webhook/event.js';
import { sendTenantMessage } from './tenant-message.js';

/**
 * The document-received queue, for events the admin function sends again: the same message the
 * access point writes (plus `resend`), the tenant as its `MessageGroupId` (fair queues).
 */
export function createSqsDocumentEventQueue(queueUrl: string, client?: SQSClient): DocumentEventQueue {
  return {
    async send(event) {
      return sendTenantMessage(
        { queueUrl, body: documentReceivedMessage(event), tenant: event.tenant },
        undefined,
        client,
      );
    },
  };
}
