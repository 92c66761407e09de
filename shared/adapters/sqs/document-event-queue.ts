import type { SQSClient } from '@aws-sdk/client-sqs';
import type { TraceContext } from '../../core/trace-context.js';
import type { DocumentEventQueue } from '../../core/webhook/admin.js';
import { documentReceivedMessage } from '../../core/webhook/event.js';
import { sendTenantMessage } from './tenant-message.js';

/**
 * The document-received queue, for events the admin function sends again: the same message the
 * access point writes (plus `resend`), the tenant as its `MessageGroupId` (fair queues). With
 * `trace` (the admin call's span), each send is its child and the message carries its
 * `traceparent`, so that the delivery of the event sent again is in the admin call's trace
 * (CONTRACT 8a).
 */
export function createSqsDocumentEventQueue(
  queueUrl: string,
  client?: SQSClient,
  trace?: TraceContext,
): DocumentEventQueue {
  return {
    async send(event) {
      return sendTenantMessage(
        { queueUrl, body: documentReceivedMessage(event), tenant: event.tenant, trace },
        undefined,
        client,
      );
    },
  };
}
