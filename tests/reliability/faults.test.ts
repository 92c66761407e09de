import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { createEmbeddedDatabase } from '../../shared/adapters/embedded/index.js';
import { registerEmbeddedDatabase } from '../../shared/config/databases.js';
import { DEMO_AUTH } from '../support/demo.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { until } from '../support/until.js';
import { envelope, signedCall } from '../support/web-api.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { LARGE_SHARE, printFigures } from './figures.js';

/** Faults the service must survive: each leaves clear answers meanwhile and nothing lost after. */
let stack: LocalStack;
let proxy: TcpProxy;
let receiver: WebhookReceiver;
let registryDir: string;
const survived: Record<string, unknown>[] = [];
// The worker's time-out is its lease (as in serverless.yml), and it keeps 5 s of it back to write the
// journal: a lease of 8 s leaves the 2 s job 3 s to run in.
const JOB_LEASE_SECONDS = 8;

beforeAll(async () => {
  const registry = JSON.parse(await readFile('infra/local/tenants.json', 'utf8'));
  registry.tenants.offline = {
    ...registry.tenants.demo,
    // Nothing listens on port 1: a SQL Server that cannot be reached.
    database: { kind: 'mssql', connectionString: 'mssql://svc:secret@127.0.0.1:1/ERP?connectTimeout=2000' },
  };
  registryDir = await mkdtemp(join(tmpdir(), 'faults-'));
  const registryFile = join(registryDir, 'tenants.json');
  await writeFile(registryFile, JSON.stringify(registry));
  receiver = await startWebhookReceiver();
  // The embedded database: the first fault closes it under the running stack.
  stack = await startLocalStack({
    port: 0,
    database: 'embedded',
    env: {
      ...LARGE_SHARE,
      TENANT_REGISTRY_FILE: registryFile,
      WEBHOOK_RETRY_SCHEDULE: '1,1,1,1',
      INLINE_LIMIT_BYTES: '1024',
      // The killed job worker: getDataAsync answers -2/160 after 1 s while the job runs; its lease
      // lapses after 8 s and the job queue's visibility (6 × the lease) brings it back after 48 s.
      COMMAND_TIMEOUT_ASYNC: '1',
      WEB_API_JOB_LEASE_SECONDS: String(JOB_LEASE_SECONDS),
    },
    // SQS and S3 through a proxy the test can cut: the emulator keeps its queues meanwhile.
    awsEndpoint: async (endpoint) => {
      proxy = await startTcpProxy(Number(new URL(endpoint).port));
      return `http://127.0.0.1:${proxy.port}`;
    },
  });
});
afterAll(async () => {
  printFigures('faults survived', survived);
  await stack?.stop();
  await proxy?.close();
  await receiver?.close();
  if (registryDir) await rm(registryDir, { recursive: true, force: true });
});

const dataApi = (path: string, tenant = 'demo') =>
  fetch(`${stack.url}/${tenant}/JsonAPI/Data/${path}`, {
    headers: { authorization: DEMO_AUTH },
    redirect: 'manual',
  });
const webApi = (operation: string, body: string, tenant = 'demo') => {
  const call = signedCall(body);
  return fetch(`${stack.url}/${tenant}/WebAPI/${operation}`, {
    method: 'POST',
    headers: call.headers,
    body: call.body,
  });
};
const documentReceived = (subjectId: number, documentId: number) =>
  fetch(`${stack.url}/_local/documents/received`, {
    method: 'POST',
    body: JSON.stringify({ subjectId, documentId }),
  });
const errorCodeOf = async (response: Response) =>
  ((await response.json()) as { data: { error: { errorCode: string }[] }[] }).data[0]!.error[0]!.errorCode;

async function deliveryRows(documentId: number) {
  const result = await stack.pglite!.query<{ ATTEMPT: number; OUTCOME: string; ERROR: string | null }>(
    'SELECT "ATTEMPT", "OUTCOME", "ERROR" FROM dbo."WEBHOOK_DELIVERY" WHERE "DOCUMENT_ID" = $1 ORDER BY "ATTEMPT"',
    [documentId],
  );
  return result.rows;
}

async function subjectWebhook(subjectId: number, url: string) {
  await stack.pglite!.query('UPDATE dbo."SUBJECT" SET "WEBHOOK_URL" = $1 WHERE "ID" = $2', [url, subjectId]);
}

describe('faults', () => {
  it('the database goes away: 503 (Web API 150) meanwhile, served again once it is back', async () => {
    const closed = new PGlite();
    await closed.close();
    registerEmbeddedDatabase('demo', createEmbeddedDatabase(closed));
    let requests = 0;
    try {
      for (let i = 0; i < 5; i++) {
        const read = await dataApi('getRowsCount/SUBJECT');
        expect(read.status).toBe(503);
        expect(((await read.json()) as { error: { code: string } }).error.code).toBe('database_unavailable');
        const call = await webApi('getData', envelope(1001, [{ nazev: 'alfa' }]));
        expect(call.status).toBe(503);
        expect(await errorCodeOf(call)).toBe('150');
        requests += 2;
      }
    } finally {
      registerEmbeddedDatabase('demo', stack.database);
    }
    expect((await dataApi('getRowsCount/SUBJECT')).status).toBe(200);
    expect((await webApi('getData', envelope(1001, [{ nazev: 'alfa' }]))).status).toBe(200);
    survived.push({ fault: 'embedded_database_closed', requests, answered: '503/150', recovered: 'yes' });
  });

  it('a SQL Server that cannot be reached: 503 (Web API 150) every time, quickly, nothing else affected', async () => {
    const started = Date.now();
    for (let i = 0; i < 5; i++) {
      expect((await dataApi('getRowsCount/SUBJECT', 'offline')).status).toBe(503);
      const call = await webApi('getData', envelope(1001), 'offline');
      expect(call.status).toBe(503);
      expect(await errorCodeOf(call)).toBe('150');
    }
    expect((await dataApi('getRowsCount/SUBJECT')).status).toBe(200);
    survived.push({
      fault: 'sql_server_unreachable',
      requests: 10,
      answered: '503/150',
      seconds: (Date.now() - started) / 1000,
    });
  });

  it('SQS and S3 go away: async calls, events and large answers are refused clearly; nothing accepted is lost', async () => {
    await subjectWebhook(3, `${receiver.url}/outage`);
    // Accepted just before the outage: must arrive once the queue is back.
    const accepted = [31_001, 31_002, 31_003];
    for (const documentId of accepted) expect((await documentReceived(3, documentId)).status).toBe(202);
    proxy.cut();
    let refused = 0;
    try {
      for (const documentId of [31_101, 31_102]) {
        const response = await documentReceived(3, documentId);
        expect(response.status).toBe(503);
        refused++;
      }
      const async = await webApi('getDataAsync', envelope(1001, [{ nazev: 'alfa' }]));
      expect(async.status).toBe(503);
      expect(await errorCodeOf(async)).toBe('150');
      refused++;
      const large = await dataApi('getData/SUBJECT');
      expect(large.status).toBe(503);
      refused++;
      // Reads that need neither go on.
      expect((await dataApi('getRowsCount/SUBJECT')).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 2000));
    } finally {
      proxy.resume();
    }
    // The refused async call left no journal entry running.
    const running = await stack.pglite!.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM dbo."WS_JOURNAL" WHERE "STATE" = 'running'`,
    );
    expect(running.rows[0]!.n).toBe(0);
    for (const documentId of [31_101, 31_102])
      expect((await documentReceived(3, documentId)).status).toBe(202);
    const all = [...accepted, 31_101, 31_102];
    const got = await until(
      'every event at the receiver',
      async () => new Set(receiver.receivedOn('/outage').map((r) => Number(r.body))),
      (ids) => all.every((id) => ids.has(id)),
      60_000,
    );
    expect([...got].sort()).toEqual(all.sort());
    expect((await dataApi('getData/SUBJECT')).status).toBe(303);
    survived.push({
      fault: 'sqs_s3_unreachable',
      refusedClearly: refused,
      acceptedBefore: accepted.length,
      deliveredAfter: got.size,
      lost: all.length - got.size,
    });
  });

  it('a webhook receiver that hangs past 10 s: the attempt is recorded as a time-out and retried', async () => {
    // Two hangs: the first attempt is cut at the fast lane's 2 s and tried again at once in the
    // slow lane, whose attempt waits the full 10 s (CONTRACT 4c); the third is answered.
    receiver.on('/hang', [
      { status: 200, delayMs: 12_000 },
      { status: 200, delayMs: 12_000 },
      { status: 200 },
    ]);
    await subjectWebhook(4, `${receiver.url}/hang`);
    expect((await documentReceived(4, 41_001)).status).toBe(202);
    const rows = await until(
      'a delivered attempt',
      () => deliveryRows(41_001),
      (r) => r.some((row) => row.OUTCOME === 'delivered'),
      40_000,
    );
    expect(rows[0]!.OUTCOME).toBe('retrying');
    expect(rows[0]!.ERROR).toMatch(/no answer within the fast lane's 2 s/);
    expect(rows[1]!.OUTCOME).toBe('retrying');
    expect(rows[1]!.ERROR).toMatch(/no answer within 10000 ms/);
    expect(rows.at(-1)!.OUTCOME).toBe('delivered');
    survived.push({
      fault: 'webhook_receiver_hangs',
      attempts: rows.length,
      firstAttempt: 'time-out',
      delivered: 'yes',
    });
  });

  it('a webhook receiver that flaps: delivered exactly once in the end', async () => {
    receiver.on('/flap', [{ status: 503 }, { status: 500 }, { status: 502 }, { status: 200 }]);
    await subjectWebhook(5, `${receiver.url}/flap`);
    expect((await documentReceived(5, 51_001)).status).toBe(202);
    const rows = await until(
      'a delivered attempt',
      () => deliveryRows(51_001),
      (r) => r.some((row) => row.OUTCOME === 'delivered'),
      40_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const final = await deliveryRows(51_001);
    expect(final.filter((row) => row.OUTCOME === 'delivered')).toHaveLength(1);
    expect(receiver.receivedOn('/flap')).toHaveLength(4);
    survived.push({ fault: 'webhook_receiver_flaps', attempts: rows.length, deliveredOnce: 'yes' });
  });

  it('the job worker killed mid-job: the job comes back, a fresh worker takes it over once its lease lapsed, and finishes it', async () => {
    const seconds = 2;
    const started = Date.now();
    const call = await webApi('getDataAsync', envelope(9001, [{ seconds }]));
    expect(call.status).toBe(200);
    const pending = (await call.json()) as {
      id: number;
      vlResult: number;
      data: { error: { errorCode: string }[] }[];
    };
    expect([pending.vlResult, pending.data[0]!.error[0]!.errorCode]).toEqual([-2, '160']);
    const j = pending.id;
    const journalRow = async () =>
      (
        await stack.pglite!.query<{ STATE: string; ATTEMPTS: number }>(
          'SELECT "STATE", "ATTEMPTS" FROM dbo."WS_JOURNAL" WHERE "ID" = $1',
          [j],
        )
      ).rows[0]!;
    expect(await journalRow()).toEqual({ STATE: 'running', ATTEMPTS: 1 });
    // The worker dies with the operation half done: nothing more from it, its message not deleted.
    expect(stack.killJobWorker()).toBe(1);
    const killedAfter = (Date.now() - started) / 1000;
    // Past the end the killed operation would have had, the job is still running: nobody finished it.
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000 + 1000));
    expect(await journalRow()).toEqual({ STATE: 'running', ATTEMPTS: 1 });

    const result997 = envelope(997, [{ idws_journal: j }]);
    const answer = await until(
      'the job finished by another worker',
      async () => (await webApi('getData', result997)).json() as Promise<{ data: { id?: number }[] }>,
      (body) => body.data[0]?.id === j,
      90_000,
      500,
    );
    const finishedAfter = (Date.now() - started) / 1000;
    expect(answer.data).toEqual([{ resultForId: { id: j, vlResult: 1, data: [{ slept: seconds }] }, id: j }]);
    const row = await journalRow();
    expect(row.STATE).toBe('finished');
    // Delivered again after the visibility time-out and taken over on the lapsed lease.
    expect(row.ATTEMPTS).toBeGreaterThanOrEqual(2);
    expect(finishedAfter).toBeGreaterThanOrEqual(6 * JOB_LEASE_SECONDS);
    const running = await stack.pglite!.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM dbo."WS_JOURNAL" WHERE "STATE" = 'running'`,
    );
    expect(running.rows[0]!.n).toBe(0);
    // The message was deleted by the worker that finished it: nothing left on the queue or dead-lettered.
    const sqs = new SQSClient({ endpoint: process.env.AWS_ENDPOINT_URL });
    try {
      for (const queue of ['web-api-jobs', 'web-api-jobs-dlq']) {
        const { Attributes } = await sqs.send(
          new GetQueueAttributesCommand({
            QueueUrl: stack.queueUrls.get(queue),
            AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
          }),
        );
        expect([queue, Attributes]).toEqual([
          queue,
          { ApproximateNumberOfMessages: '0', ApproximateNumberOfMessagesNotVisible: '0' },
        ]);
      }
    } finally {
      sqs.destroy();
    }
    survived.push({
      fault: 'job_worker_killed',
      leaseSeconds: JOB_LEASE_SECONDS,
      visibilitySeconds: 6 * JOB_LEASE_SECONDS,
      killedAfterSeconds: killedAfter,
      deliveries: row.ATTEMPTS,
      finishedAfterSeconds: finishedAfter,
      leftRunning: running.rows[0]!.n,
    });
  });

  it('the stack is alive after every fault', async () => {
    expect((await fetch(`${stack.url}/health`)).status).toBe(200);
  });
});
