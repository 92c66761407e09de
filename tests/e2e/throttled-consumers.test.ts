import { ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOCUMENT_RECEIVED_QUEUE, WEB_API_JOB_QUEUE } from '../../infra/local/queues.js';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { DEMO_AUTH, sqlOn } from '../support/demo.js';
import { type RecordingProxy, startRecordingProxy } from '../support/recording-proxy.js';
import { until } from '../support/until.js';
import { envelope, signedCall } from '../support/web-api.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

/**
 * Receives that never reach the function, as when Lambda's SQS poller is throttled: it receives a
 * batch, cannot invoke the function, and the messages come back with a higher receive count. The
 * test takes the pollers' place (pauseConsumers), receives each message itself and lets it come
 * back at once, several times; then the real pollers run it. Every attempt of the schedule must
 * still be made, counted where it is recorded (WEBHOOK_DELIVERY, WS_JOURNAL), and the last
 * recorded attempt must end the message. Everything the service sends to SQS goes through a
 * recording proxy, to check `MessageGroupId` on the wire (fauxqs does not give it back).
 */

// 3 webhook attempts (1 s, then 2 s); a job lease of 1 s, so the job queue's visibility is 6 s.
const SCHEDULE = '1,2';
const THROTTLED_RECEIVES = 4;

let stack: LocalStack;
let proxy: RecordingProxy;
let receiver: WebhookReceiver;
let sqs: SQSClient;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  stack = await startLocalStack({
    port: 0,
    env: {
      WEBHOOK_RETRY_SCHEDULE: SCHEDULE,
      WEB_API_JOB_LEASE_SECONDS: '1',
      COMMAND_TIMEOUT_ASYNC: '1',
    },
    awsEndpoint: async (endpoint) => {
      proxy = await startRecordingProxy(endpoint);
      return proxy.endpoint;
    },
  });
  // The test's own client goes straight to the emulator: its calls are not the service's.
  sqs = new SQSClient({ endpoint: `http://127.0.0.1:${stack.emulator.port}` });
  // An operation whose WS_OPERATION row is broken: every attempt fails outside the database.
  await sqlOn(stack.database)`INSERT INTO dbo."WS_OPERATION" ("VLTYP", "NAZEV", "PROCEDURE_NAME", "ROW_NAME")
    VALUES (${9100}, ${'broken'}, ${'not a name'}, ${'Broken'})`;
});
afterAll(async () => {
  sqs?.destroy();
  await stack?.stop();
  await proxy?.close();
  await receiver?.close();
});

/**
 * Receives the queue's message `times` times without handling it, each time letting it come
 * back at once, as a throttled consumer would (after its visibility time-out). Answers the
 * receive counts seen.
 */
async function throttledReceives(queue: string, times: number): Promise<number[]> {
  const counts: number[] = [];
  while (counts.length < times) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: stack.queueUrls.get(queue),
        MaxNumberOfMessages: 1,
        WaitTimeSeconds: 1,
        VisibilityTimeout: 0,
        MessageSystemAttributeNames: ['ApproximateReceiveCount'],
      }),
    );
    for (const message of Messages) counts.push(Number(message.Attributes?.ApproximateReceiveCount));
  }
  return counts;
}

/** The receives before the function's: 1, 2, … THROTTLED_RECEIVES. */
function expectThrottled(counts: number[]) {
  expect(counts).toEqual(Array.from({ length: THROTTLED_RECEIVES }, (_, i) => i + 1));
}

/** The dead-letter queue's messages, looked at without taking them. */
async function deadLetters(queue: string) {
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: stack.queueUrls.get(`${queue}-dlq`),
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: 1,
      VisibilityTimeout: 0,
      MessageAttributeNames: ['All'],
    }),
  );
  return Messages;
}

type Delivery = { ATTEMPT: number; OUTCOME: string; MESSAGE_ID: string; HTTP_STATUS?: number };

async function deliveries(documentId: number): Promise<Delivery[]> {
  const condition = encodeURIComponent(`DOCUMENT_ID = ${documentId}`);
  const response = await fetch(
    `${stack.url}/demo/JsonAPI/Data/getDataWithCondition/WEBHOOK_DELIVERY?condition=${condition}`,
    { headers: { authorization: DEMO_AUTH } },
  );
  return ((await response.json()) as { WEBHOOK_DELIVERY: Delivery[] }).WEBHOOK_DELIVERY;
}

describe('Receives that never reach the function (a throttled consumer), local stack', () => {
  it('gives a webhook event every attempt of the schedule, then dead-letters it itself, with its tenant as group', async () => {
    receiver.on('/throttled', { status: 500 });
    await sqlOn(stack.database)`UPDATE dbo."SUBJECT" SET "WEBHOOK_URL" = ${`${receiver.url}/throttled`},
      "SECRET_WEBHOOK" = ${'secret-12'} WHERE "ID" = ${12}`;
    const resume = await stack.pauseConsumers(DOCUMENT_RECEIVED_QUEUE);
    let queued: { messageId: string };
    try {
      const response = await fetch(`${stack.url}/_local/documents/received`, {
        method: 'POST',
        body: JSON.stringify({ subjectId: 12, documentId: 12001 }),
      });
      expect(response.status).toBe(202);
      queued = (await response.json()) as { messageId: string };
      expectThrottled(await throttledReceives(DOCUMENT_RECEIVED_QUEUE, THROTTLED_RECEIVES));
    } finally {
      resume();
    }
    // Before, the receive count (5 at the first run) was the attempt: past the
    // schedule's 3, the event went to the dead-letter queue unsent.
    const requests = await receiver.waitFor('/throttled', 3);
    expect(requests).toHaveLength(3);
    const rows = await until(
      'the last attempt',
      () => deliveries(12001),
      (r) => r.length >= 3,
    );
    expect(rows.map((r) => [r.ATTEMPT, r.OUTCOME, r.HTTP_STATUS, r.MESSAGE_ID])).toEqual([
      [1, 'retrying', 500, queued.messageId],
      [2, 'retrying', 500, queued.messageId],
      [3, 'failed', 500, queued.messageId],
    ]);
    const body = JSON.stringify({ tenant: 'demo', subjectId: 12, documentId: 12001 });
    const dead = await until(
      'the dead-lettered event',
      () => deadLetters(DOCUMENT_RECEIVED_QUEUE),
      (messages) => messages.some((m) => m.Body === body),
    );
    const copy = dead.find((m) => m.Body === body)!;
    // Its log lines carry the original message id: the copy names it.
    expect(copy.MessageAttributes?.sourceMessageId?.StringValue).toBe(queued.messageId);
    // Not left on the queue for the redrive policy, and no fourth attempt.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(receiver.receivedOn('/throttled')).toHaveLength(3);
    // On the wire: the event, its copy for the slow lane (after the first attempt failed) and its
    // dead-lettered copy, all in the tenant's group; the dead-lettered one without the lanes' marks.
    const sends = proxy.sqsCalls('SendMessage').filter((call) => call.MessageBody === body);
    const queueOf = (url: string) => url.split('/').at(-1);
    expect(sends.map((call) => [queueOf(String(call.QueueUrl)), call.MessageGroupId])).toEqual([
      ['document-received', 'demo'],
      ['document-received-slow', 'demo'],
      ['document-received-dlq', 'demo'],
    ]);
    // Its trace context travels with it (CONTRACT 8a).
    expect(Object.keys(copy.MessageAttributes ?? {}).sort()).toEqual(['sourceMessageId', 'traceparent']);
  }, 30_000);

  it('gives a job every attempt, counted in WS_JOURNAL, ends it as failed on the last and removes its message', async () => {
    const resume = await stack.pauseConsumers(WEB_API_JOB_QUEUE);
    let journalId: number;
    try {
      const call = signedCall(envelope(9100));
      const response = await fetch(`${stack.url}/demo/WebAPI/getDataAsync`, {
        method: 'POST',
        headers: call.headers,
        body: call.body,
      });
      const answer = (await response.json()) as { id: number; vlResult: number };
      expect(answer.vlResult).toBe(-2);
      journalId = answer.id;
      expectThrottled(await throttledReceives(WEB_API_JOB_QUEUE, THROTTLED_RECEIVES));
    } finally {
      resume();
    }
    const journal = async () =>
      (
        await sqlOn(stack.database)`SELECT "STATE", "ATTEMPTS", "ANSWER" FROM dbo."WS_JOURNAL"
          WHERE "ID" = ${journalId}`
      )[0] as { STATE: string; ATTEMPTS: number; ANSWER: string | null };
    // Three attempts, 6 s apart (the queue's visibility, 6 × the 1 s lease).
    const ended = await until('the job to end', journal, (row) => row.STATE !== 'running', 30_000, 200);
    // Before, its first run had receive count 5, past the 3 attempts: it ended after one.
    expect(ended).toMatchObject({ STATE: 'failed', ATTEMPTS: 3 });
    expect(JSON.parse(ended.ANSWER!).data[0].error[0]).toEqual({
      errorCode: '170',
      errorMessage: 'The job could not be completed after 3 attempts',
    });
    // Its journal says why: the message is removed, not dead-lettered, and not run again.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: stack.queueUrls.get(WEB_API_JOB_QUEUE),
        WaitTimeSeconds: 0,
        VisibilityTimeout: 0,
      }),
    );
    expect(Messages).toEqual([]);
    const dead = await deadLetters(WEB_API_JOB_QUEUE);
    expect(dead.map((m) => JSON.parse(m.Body!).journalId)).not.toContain(journalId);
    expect(await journal()).toMatchObject({ ATTEMPTS: 3 });
    // On the wire: the job went out in its tenant's group.
    const sends = proxy
      .sqsCalls('SendMessage')
      .filter((call) => String(call.MessageBody).includes(`"journalId":${journalId},`));
    expect(sends.map((call) => call.MessageGroupId)).toEqual(['demo']);
  }, 60_000);
});
