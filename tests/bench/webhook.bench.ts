import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DOCUMENT_RECEIVED_QUEUE } from '../../infra/local/queues.js';
import { startLocalStack } from '../../infra/local/stack.js';
import { documentReceivedMessage } from '../../shared/core/webhook/event.js';

const EVENTS = 1000;
const RAW_POSTS = 2000;
// The consumer's batch size: at most this many webhooks are in flight at once.
const IN_FLIGHT = 10;
const SUBJECTS = 50;

/**
 * Webhook deliveries per second through the local stack (queue → poller → handler → POST →
 * WEBHOOK_DELIVERY) to a receiver that answers at once, against raw HTTP POSTs per second to the
 * same receiver with as many in flight.
 */
export default async function webhookBench(): Promise<void> {
  let received = 0;
  let onReceived: (() => void) | undefined;
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received += 1;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"status":"success"}');
      onReceived?.();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const port = (receiver.address() as AddressInfo).port;
  const stack = await startLocalStack({ port: 0, database: 'embedded' });
  const sqs = new SQSClient({ endpoint: `http://127.0.0.1:${stack.emulator.port}` });
  const agent = new Agent({ keepAlive: true });
  try {
    // Baseline: the receiver's own speed, as a client that does nothing else sees it.
    const post = () =>
      new Promise<void>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/raw', agent }, (res) => {
          res.resume();
          res.on('end', resolve);
        });
        req.on('error', reject);
        req.end('123456');
      });
    let next = 0;
    const rawStart = performance.now();
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next++ < RAW_POSTS) await post();
      }),
    );
    const rawRate = RAW_POSTS / ((performance.now() - rawStart) / 1000);

    await stack.database.query(`UPDATE dbo."SUBJECT" SET "WEBHOOK_URL" = $1 WHERE "ID" <= $2`, [
      `http://127.0.0.1:${port}/hook`,
      SUBJECTS,
    ]);
    received = 0;
    const allDelivered = new Promise<void>((resolve) => {
      onReceived = () => {
        if (received >= EVENTS) resolve();
      };
    });
    const queueUrl = stack.queueUrls.get(DOCUMENT_RECEIVED_QUEUE);
    const started = performance.now();
    for (let first = 0; first < EVENTS; first += 10) {
      await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: Array.from({ length: 10 }, (_, i) => ({
            Id: String(i),
            MessageBody: documentReceivedMessage({
              tenant: 'demo',
              subjectId: 1 + ((first + i) % SUBJECTS),
              documentId: 500_000 + first + i,
            }),
          })),
        }),
      );
    }
    const enqueued = performance.now();
    await allDelivered;
    const elapsed = (performance.now() - started) / 1000;
    // Wait for the last records, then check that every event was delivered once.
    let delivered = 0;
    for (let tries = 0; tries < 100 && delivered < EVENTS; tries++) {
      const rows = await stack.database.query(
        `SELECT count(*)::int AS n FROM dbo."WEBHOOK_DELIVERY" WHERE "OUTCOME" = 'delivered' AND "DOCUMENT_ID" >= 500000`,
      );
      delivered = Number(rows[0]!.n);
      if (delivered < EVENTS) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (delivered !== EVENTS || received !== EVENTS) {
      throw new Error(`expected ${EVENTS} deliveries, got ${delivered} recorded and ${received} received`);
    }
    const rate = EVENTS / elapsed;
    console.log(
      `webhook deliveries through the local stack: ${rate.toFixed(0)}/s (${EVENTS} events in ${elapsed.toFixed(2)} s, ` +
        `enqueued in ${((enqueued - started) / 1000).toFixed(2)} s, each recorded in WEBHOOK_DELIVERY) | ` +
        `raw HTTP POSTs to the same receiver, ${IN_FLIGHT} in flight: ${rawRate.toFixed(0)}/s | ` +
        `ratio ${(rate / rawRate).toFixed(3)}`,
    );
  } finally {
    agent.destroy();
    sqs.destroy();
    await stack.stop();
    receiver.closeAllConnections();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  }
}
