import type { SQSClient } from '@aws-sdk/client-sqs';

let shared: { endpoint: string | undefined; client: Promise<SQSClient> } | undefined;

/** The SQS module of the AWS SDK, imported on first use: it is not parsed during a cold start. */
export const sqsModule = () => import('@aws-sdk/client-sqs');

/**
 * The SQS client of this process (endpoint from `AWS_ENDPOINT_URL` where set, e.g. the local
 * emulator), created at its first use.
 */
export function sqsClient(): Promise<SQSClient> {
  const endpoint = process.env.AWS_ENDPOINT_URL;
  if (shared && shared.endpoint === endpoint) return shared.client;
  void shared?.client.then((client) => client.destroy()).catch(() => undefined);
  // An explicit endpoint also stops the SDK from taking the queue URL's host as the endpoint
  // (the emulator's queue URLs do not parse as URLs and only earn a warning).
  const client = sqsModule().then(({ SQSClient }) => new SQSClient(endpoint ? { endpoint } : {}));
  shared = { endpoint, client };
  return client;
}
