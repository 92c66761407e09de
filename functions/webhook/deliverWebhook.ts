import { documentReceivedHandler } from '../../shared/lambda/document-received.js';

/** SQS document-received queue → POST to the subject's WEBHOOK_URL (partial batch failures). */
export const handler = documentReceivedHandler();
