import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { PGlite } from '@electric-sql/pglite';
import type { Context, SQSEvent } from 'aws-lambda';
import type { FauxqsServer } from 'fauxqs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { handler as getDataAsync } from '../../functions/web-api/getDataAsync.js';
import { handler as jobWorker } from '../../functions/web-api/jobWorker.js';
import { startAwsEmulator } from '../../infra/local/aws-emulator.js';
import { type SqsLambda, startSqsPoller } from '../../infra/local/sqs-poller.js';
import { createEmbeddedWebApiStore } from '../../shared/adapters/embedded/web-api-store.js';
import { registerEmbeddedDatabase } from '../../shared/config/databases.js';
import { setTenantRegistry } from '../../shared/config/tenant-registry.js';
import { parseTenantRegistry } from '../../shared/config/tenants.js';
import type { Database } from '../../shared/core/database.js';
import { demoDatabase } from '../support/demo.js';
import { invokeHttp } from '../support/http-api-event.js';
import { checkJobLeaseFencing } from '../support/job-lease.js';
import { DEMO_WEB_API, envelope } from '../support/web-api.js';
import { signedWebApiEvent } from '../support/web-api-event.js';

// The job queue on the SQS emulator, with a visibility of 2 s (redeliveries come quickly) and a
// worker lease of 1 s (shorter than the visibility, as in production: 90 s against 540 s).
const VISIBILITY_SECONDS = 2;

let emulator: FauxqsServer;
let sqs: SQSClient;
let pg: PGlite;
let db: Database;
let queueUrl: string;
let dlqUrl: string;
let poller: { stop(): Promise<void> };
/** What the queue's consumer does; the real worker unless a test says otherwise. */
let consumer: SqsLambda = jobWorker as SqsLambda;

const passwordHash = 'scrypt$16384$8$1$ZGVtby10ZW5hbnQtc2FsdA==$x2bp48ourmNi7AJz+st/kNLkTjPJ/XnX7NIpiDrZ8ig=';
const tenant = (database: unknown) => ({
  database,
  dataApiUsers: [{ name: 'demo', passwordHash }],
  dataSources: '*',
  webApi: { applications: DEMO_WEB_API.applications },
});

beforeAll(async () => {
  let endpoint: string;
  ({ emulator, endpoint } = await startAwsEmulator({
    env: {
      COMMAND_TIMEOUT_ASYNC: '5',
      WEB_API_JOB_MAX_RECEIVES: '3',
      WEB_API_JOB_LEASE_SECONDS: '1',
      WEB_API_JOB_STALE_SECONDS: '600',
    },
  }));
  sqs = new SQSClient({ endpoint });
  dlqUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'jobs-test-dlq' }))).QueueUrl!;
  const dlqArn = (
    await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn'] }))
  ).Attributes!.QueueArn!;
  queueUrl = (
    await sqs.send(
      new CreateQueueCommand({
        QueueName: 'jobs-test',
        Attributes: {
          VisibilityTimeout: String(VISIBILITY_SECONDS),
          RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 3 }),
        },
      }),
    )
  ).QueueUrl!;
  process.env.WEB_API_JOB_QUEUE_URL = queueUrl;
  process.env.WEB_API_JOB_DEAD_LETTER_QUEUE_URL = dlqUrl;
  const queueArn = (
    await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }))
  ).Attributes!.QueueArn!;

  const demo = await demoDatabase();
  pg = demo.pg;
  db = demo.db;
  registerEmbeddedDatabase('web-api-jobs', db);
  // An operation whose WS_OPERATION row is broken: every attempt fails outside the database.
  await pg.query(
    `INSERT INTO dbo."WS_OPERATION" ("VLTYP", "NAZEV", "PROCEDURE_NAME", "ROW_NAME") VALUES (9100, 'broken', 'not a name', 'Broken')`,
  );
  setTenantRegistry(
    parseTenantRegistry({
      tenants: {
        demo: tenant({ kind: 'embedded', name: 'web-api-jobs' }),
        offline: tenant({
          kind: 'mssql',
          connectionString: 'mssql://svc:secret@127.0.0.1:1/ERP?connectTimeout=1000',
        }),
      },
    }),
  );
  // Two pollers: two batches at once, as two concurrent Lambdas.
  const pollers = [1, 2].map(() =>
    startSqsPoller({
      client: sqs,
      queueUrl,
      queueArn,
      handler: (event: SQSEvent, context: Context) => consumer(event, context),
      functionName: 'webJobWorker',
      timeoutSeconds: 1,
      batchSize: 5,
    }),
  );
  poller = { stop: async () => void (await Promise.all(pollers.map((p) => p.stop()))) };
});

afterAll(async () => {
  await poller?.stop();
  sqs?.destroy();
  await emulator?.stop();
  setTenantRegistry(undefined);
  await pg?.close();
});

async function callAsync(body: string) {
  const result = await invokeHttp(getDataAsync, signedWebApiEvent('getDataAsync', body));
  return { status: result.statusCode, answer: JSON.parse(String(result.body)) };
}

const journal = async (id: number) =>
  (
    await pg.query<{ STATE: string; ATTEMPTS: number; ANSWER: string | null; CALL_MODE: string }>(
      'SELECT "STATE", "ATTEMPTS", "ANSWER", "CALL_MODE" FROM dbo."WS_JOURNAL" WHERE "ID" = $1',
      [id],
    )
  ).rows[0]!;

/** Opens a journal entry for operation `vltyp` as getDataAsync would, without queueing it. */
const openJob = (vltyp: number) =>
  createEmbeddedWebApiStore(db, 'demo').openJournal({
    applicationId: 1,
    vltyp,
    mode: 'async',
    request: envelope(vltyp),
    requestId: 'test',
  });

const send = (body: unknown) =>
  sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify(body) }));

async function queueIsEmpty(url: string): Promise<boolean> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return (
    Attributes?.ApproximateNumberOfMessages === '0' &&
    Attributes.ApproximateNumberOfMessagesNotVisible === '0'
  );
}

describe('Web API jobs through the SQS emulator', () => {
  it('getDataAsync queues the job, the worker runs it, and the call answers its result', async () => {
    const { status, answer } = await callAsync(envelope(7, [{ kod_uctu: '211' }]));
    expect(status).toBe(200);
    expect(answer).toEqual({
      id: expect.any(Number),
      vlResult: 1,
      data: [
        { kod_uctu: '211000', nazev: 'Pokladna', zustatek: 48250 },
        { kod_uctu: '211100', nazev: 'Pokladna EUR', zustatek: 12375.4 },
      ],
    });
    expect(await journal(answer.id)).toMatchObject({ STATE: 'finished', ATTEMPTS: 1, CALL_MODE: 'async' });
  });

  it('runs a job again on redelivery when its worker died mid-job', async () => {
    const id = await openJob(7);
    let deaths = 0;
    consumer = async (event, context) => {
      // The first worker takes the job and dies before it ends it (no answer, no ack).
      deaths += 1;
      consumer = jobWorker as SqsLambda;
      await createEmbeddedWebApiStore(db, 'demo').startAttempt(id, 1, 3);
      throw Object.assign(new Error('Runtime exited with error: signal: killed'), { event, context });
    };
    await send({ tenant: 'demo', journalId: id, requestId: 'test' });
    await vi.waitFor(async () => expect((await journal(id)).STATE).toBe('finished'), {
      timeout: 8000,
      interval: 100,
    });
    expect(deaths).toBe(1);
    expect(await journal(id)).toMatchObject({ ATTEMPTS: 2 });
    expect(JSON.parse((await journal(id)).ANSWER!)).toMatchObject({ id, vlResult: 1 });
  });

  it('a worker whose invocation is killed cancels its operation and writes nothing more; a later delivery takes over', async () => {
    const store = createEmbeddedWebApiStore(db, 'demo');
    const id = await store.openJournal({
      applicationId: 1,
      vltyp: 9001,
      mode: 'async',
      // Long enough that a cancelled run ends well before it, even on a loaded machine.
      request: envelope(9001, [{ seconds: 5 }]),
      requestId: 'test',
    });
    const delivery = (receiveCount: number): SQSEvent => ({
      Records: [
        {
          messageId: `killed-${id}`,
          receiptHandle: 'local',
          body: JSON.stringify({ tenant: 'demo', journalId: id, requestId: 'test' }),
          attributes: {
            ApproximateReceiveCount: String(receiveCount),
            SentTimestamp: String(Date.now()),
            SenderId: 'local',
            ApproximateFirstReceiveTimestamp: String(Date.now()),
          },
          messageAttributes: {},
          md5OfBody: '',
          eventSource: 'aws:sqs',
          eventSourceARN: 'arn:aws:sqs:local:000000000000:jobs-test',
          awsRegion: 'eu-central-1',
        },
      ],
    });
    const context = { awsRequestId: 'killed', getRemainingTimeInMillis: () => 60_000 } as Context;
    const killed = new AbortController();
    const started = Date.now();
    const invocation = jobWorker(delivery(1), context, { signal: killed.signal });
    await vi.waitFor(async () => expect((await journal(id)).ATTEMPTS).toBe(1), {
      timeout: 2000,
      interval: 20,
    });
    killed.abort();
    await invocation;
    // Cancelled, not run to its end; the journal untouched since its attempt began, the lease held.
    expect(Date.now() - started).toBeLessThan(4500);
    expect(await journal(id)).toMatchObject({ STATE: 'running', ATTEMPTS: 1, ANSWER: null });
    const lease = await pg.query<{ held: boolean }>(
      `SELECT "LEASE_UNTIL" > (now() AT TIME ZONE 'utc') AS held FROM dbo."WS_JOURNAL" WHERE "ID" = $1`,
      [id],
    );
    expect(lease.rows[0]!.held).toBe(true);
    // Once the 1 s lease lapsed, the next delivery takes the job over and finishes it.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await jobWorker(delivery(2), context);
    expect(await journal(id)).toMatchObject({ STATE: 'finished', ATTEMPTS: 2 });
    expect(JSON.parse((await journal(id)).ANSWER!)).toEqual({ id, vlResult: 1, data: [{ slept: 5 }] });
  });

  it('finishes a job only for its latest attempt: a slow worker whose lease a successor took finishes nothing (issue 19)', async () => {
    await checkJobLeaseFencing(createEmbeddedWebApiStore(db, 'demo'));
  });

  it('does not run a finished job again when its message arrives twice', async () => {
    const { answer } = await callAsync(envelope(7, [{ kod_uctu: '3' }]));
    const before = await journal(answer.id);
    await send({ tenant: 'demo', journalId: answer.id, requestId: 'duplicate' });
    await vi.waitFor(async () => expect(await queueIsEmpty(queueUrl)).toBe(true), {
      timeout: 5000,
      interval: 100,
    });
    expect(await journal(answer.id)).toEqual(before);
  });

  it.concurrent('ends a job that fails on every delivery as failed on its last one, before the DLQ could take it', async () => {
    const id = await openJob(9100);
    await send({ tenant: 'demo', journalId: id, requestId: 'test' });
    await vi.waitFor(async () => expect((await journal(id)).STATE).toBe('failed'), {
      timeout: 12_000,
      interval: 100,
    });
    const entry = await journal(id);
    expect(entry.ATTEMPTS).toBe(3);
    expect(JSON.parse(entry.ANSWER!)).toEqual({
      id,
      vlResult: -1,
      data: [
        { error: [{ errorCode: '170', errorMessage: 'The job could not be completed after 3 attempts' }] },
      ],
    });
    // Its last delivery succeeded in ending it, so the message is gone, not dead-lettered.
    const dead = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: dlqUrl, WaitTimeSeconds: 0, VisibilityTimeout: 0 }),
    );
    expect((dead.Messages ?? []).map((m) => JSON.parse(m.Body!).journalId)).not.toContain(id);
  });

  it.concurrent('gives a job the worker cannot even journal to the dead-letter queue after its attempts, by the receive count', async () => {
    await send({ tenant: 'offline', journalId: 424242, requestId: 'test' });
    await vi.waitFor(
      async () => {
        // Looked at, not taken: it stays visible.
        const dead = await sqs.send(
          new ReceiveMessageCommand({ QueueUrl: dlqUrl, WaitTimeSeconds: 1, VisibilityTimeout: 0 }),
        );
        expect((dead.Messages ?? []).map((m) => JSON.parse(m.Body!).journalId)).toContain(424242);
      },
      { timeout: 15_000, interval: 200 },
    );
  });
});
