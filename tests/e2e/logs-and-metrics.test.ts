import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { GetQueueUrlCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOCUMENT_RECEIVED_QUEUE } from '../../infra/local/queues.js';
import { signedCall } from '../support/web-api.js';

// The whole local stack in its own process at DEBUG with JSON lines, as Lambda would log them:
// everything it writes (stdout and stderr) is searched for the demo secrets, and read back as
// the request summaries and the EMF documents (the local stack logs those at DEBUG).
const INLINE_LIMIT = 1024 * 1024;
const BASIC = Buffer.from('demo:demo-password').toString('base64');

let child: ChildProcess | undefined;
let output = '';
let base = '';
let sqsEndpoint = '';
/** Secrets this test itself sent or received (signatures, presigned URL signatures). */
const sent: string[] = [];

beforeAll(async () => {
  child = spawn('npx', ['tsx', '--disable-warning=ExperimentalWarning', 'infra/local/main.ts'], {
    env: {
      ...process.env,
      PORT: '0',
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'DEBUG',
      POWERTOOLS_LOG_LEVEL: 'DEBUG',
      INLINE_LIMIT_BYTES: String(INLINE_LIMIT),
      COMMAND_TIMEOUT_ASYNC: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  child.stdout!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not ready in time:\n${output}`)), 60_000);
    child!.stdout!.on('data', () => {
      const health = /Health\s+(http:\/\/127\.0\.0\.1:\d+)\/health/.exec(output);
      const emulator = /SQS\/S3\s+(http:\/\/\S+)/.exec(output);
      if (health && emulator) {
        clearTimeout(timer);
        base = health[1]!;
        sqsEndpoint = emulator[1]!;
        resolve();
      }
    });
    child!.once('exit', (code) => reject(new Error(`exited with ${code}:\n${output}`)));
  });
}, 90_000);

afterAll(() => {
  if (child?.pid && child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
});

/** The JSON lines logged so far (the banner and other text left out). */
function logLines(): Record<string, unknown>[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The EMF documents the stack emitted (logged at DEBUG as `metrics`). */
const emfDocuments = () =>
  logLines()
    .filter((line) => line.message === 'metrics')
    .map(
      (line) =>
        line.emf as Record<string, unknown> & { _aws: { CloudWatchMetrics: { Dimensions: string[][] }[] } },
    );

async function until<T>(what: string, probe: () => T | Promise<T>, ok: (value: T) => boolean, ms = 15_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function webApi(path: string, body: string) {
  const call = signedCall(body);
  sent.push(/v1=([0-9a-f]+)/.exec(call.headers['x-svc-signature']!)![1]!);
  const response = await fetch(`${base}/demo/WebAPI/${path}`, {
    method: 'POST',
    headers: call.headers,
    body: call.body,
  });
  return { status: response.status, body: (await response.json()) as { id: number; vlResult: number } };
}

describe('logs and metrics of the local stack (LOG_LEVEL=DEBUG, LOG_FORMAT=json)', () => {
  it('runs every flow with secrets in play', async () => {
    const auth = { authorization: `Basic ${BASIC}` };
    expect((await fetch(`${base}/demo/JsonAPI/Data/getRowsCount/SUBJECT`, { headers: auth })).status).toBe(
      200,
    );
    expect((await fetch(`${base}/demo/JsonAPI/Data/getData/SUBJECT`, { headers: auth })).status).toBe(200);
    const wrong = { authorization: `Basic ${Buffer.from('demo:wrong-password').toString('base64')}` };
    expect((await fetch(`${base}/demo/JsonAPI/Data/getData/SUBJECT`, { headers: wrong })).status).toBe(401);

    // A file over the inline limit: getFile answers 303 to a presigned URL.
    const form = new FormData();
    form.append('file', new Blob([randomBytes(INLINE_LIMIT + 1024)], { type: 'application/pdf' }), 'big.pdf');
    const upload = await fetch(`${base}/demo/JsonAPI/File/setFile`, {
      method: 'POST',
      headers: auth,
      body: form,
    });
    expect(upload.status).toBe(200);
    const { fileGUID } = (await upload.json()) as { fileGUID: string };
    const redirect = await fetch(`${base}/demo/JsonAPI/File/getFile/${fileGUID}`, {
      headers: auth,
      redirect: 'manual',
    });
    expect(redirect.status).toBe(303);
    const location = redirect.headers.get('location')!;
    sent.push(new URL(location).searchParams.get('X-Amz-Signature')!);
    expect((await fetch(location)).status).toBe(200);

    const test = await fetch(`${base}/demo/WebAPI/test`, { headers: { 'x-api-key': 'demo-api-key' } });
    expect(test.status).toBe(200);
    expect(
      (await webApi('getData', JSON.stringify({ vltyp: 7, params: [{ kod_uctu: '3' }] }))).body.vlResult,
    ).toBe(1);
    // Longer than COMMAND_TIMEOUT_ASYNC: -2/160 now, the job finishes in the worker afterwards.
    const slow = await webApi('getDataAsync', JSON.stringify({ vltyp: 9001, params: [{ seconds: 2 }] }));
    expect(slow.body.vlResult).toBe(-2);

    // The demo webhook (signed with demo-webhook-secret) to the stack's own sink.
    const event = await fetch(`${base}/_local/documents/received`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ subjectId: 1, documentId: 4242 }),
    });
    expect(event.status).toBe(202);
    const deliveries = await until(
      'the webhook',
      async () =>
        (await (await fetch(`${base}/_local/webhook-sink`)).json()) as {
          headers: Record<string, string>;
        }[],
      (list) => list.length > 0,
    );
    for (const delivery of deliveries) {
      for (const signature of String(delivery.headers['webhook-signature']).split(' ')) {
        sent.push(signature.replace(/^v1,/, ''));
      }
    }
    // An unreadable event goes straight to the dead-letter queue.
    const sqs = new SQSClient({
      endpoint: sqsEndpoint,
      region: 'eu-central-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: DOCUMENT_RECEIVED_QUEUE }));
    await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'not an event' }));
    sqs.destroy();

    await until(
      'the job, the webhook and the dead letter',
      () => emfDocuments(),
      (documents) =>
        documents.some((d) => d.WebApiJobs !== undefined && d.outcome === 'finished') &&
        documents.some((d) => d.WebhookAttempts !== undefined && d.outcome === 'delivered') &&
        documents.some((d) => d.DeadLettered !== undefined),
      20_000,
    );
  }, 60_000);

  it('logs no secret: passwords, hashes, signatures, the webhook secret, Basic credentials, presigned signatures', () => {
    expect(sent.length).toBeGreaterThanOrEqual(4);
    const secrets = [
      'demo-password',
      'wrong-password',
      'demo-api-hash',
      'other-api-hash',
      'demo-webhook-secret',
      BASIC,
      Buffer.from('demo:wrong-password').toString('base64'),
      ...sent,
    ];
    // The banner names the demo credentials for the user; the logs must not.
    const logged = output.slice(output.indexOf('Stop with Ctrl+C.'));
    expect(logged.length).toBeGreaterThan(1000);
    for (const secret of secrets) {
      expect(logged.includes(secret) ? secret : undefined, `logged: ${secret}`).toBeUndefined();
    }
    expect(logged).not.toMatch(/X-Amz-(Signature|Credential)=(?!\[redacted\])/i);
    // The headers were logged (at DEBUG), with their secrets redacted.
    expect(logged).toContain('"authorization":"[redacted]"');
    expect(logged).toContain('"x-svc-signature":"[redacted]"');
    expect(logged).toContain('X-Amz-Signature=[redacted]');
  });

  it('writes one summary line per request and per SQS record', () => {
    const lines = logLines();
    const requests = lines.filter((line) => line.message === 'request');
    expect(requests.find((line) => line.status === 401)).toMatchObject({
      level: 'INFO',
      method: 'GET',
      path: '/demo/JsonAPI/Data/getData/SUBJECT',
      tenant: 'demo',
      route: 'GET /{tenant}/JsonAPI/Data/getData/{dataSource}',
      function: 'dataGetData',
      requestId: expect.any(String),
      durationMs: expect.any(Number),
      coldStart: false,
      errorCode: 'unauthorized',
    });
    expect(requests.find((line) => line.status === 303)).toMatchObject({ coldStart: true, tenant: 'demo' });
    expect(lines.find((line) => line.message === 'job' && line.outcome === 'finished')).toMatchObject({
      tenant: 'demo',
      journalId: expect.any(Number),
      durationMs: expect.any(Number),
      function: 'webJobWorker',
    });
    expect(lines.find((line) => line.message === 'webhook' && line.outcome === 'delivered')).toMatchObject({
      tenant: 'demo',
      subjectId: 1,
      durationMs: expect.any(Number),
    });
    expect(lines.find((line) => line.message === 'webhook' && line.deadLetter)).toMatchObject({
      level: 'ERROR',
      outcome: 'not_recorded',
    });
    // The local server's own line for every request, the ones no function answers included.
    expect(lines.filter((line) => line.message === 'access').length).toBeGreaterThan(requests.length);
  });

  it('emits EMF: requests by route and status class, Web API calls, time-outs, jobs, webhooks, dead letters', () => {
    const documents = emfDocuments();
    const find = (metric: string, dimensions: Record<string, unknown>) =>
      documents.find(
        (d) =>
          d[metric] !== undefined && Object.entries(dimensions).every(([key, value]) => d[key] === value),
      );
    const request = find('Requests', {
      route: 'GET /{tenant}/JsonAPI/Data/getData/{dataSource}',
      statusClass: '4xx',
    });
    expect(request).toMatchObject({ Requests: 1, ServerErrors: 0, function: 'dataGetData' });
    expect(request!._aws.CloudWatchMetrics[0]!.Dimensions).toEqual([
      ['service', 'function'],
      ['service', 'route', 'statusClass'],
    ]);
    expect(
      find('Requests', { route: 'GET /{tenant}/JsonAPI/File/getFile/{fileGUID}', statusClass: '3xx' }),
    ).toBeDefined();
    expect(find('WebApiCalls', { vltyp: '7', vlResult: '1' })).toMatchObject({ WebApiCalls: 1 });
    expect(find('WebApiCalls', { vltyp: '9001', vlResult: '-2' })).toBeDefined();
    expect(find('WebApiAsyncTimeouts', {})).toMatchObject({ WebApiAsyncTimeouts: 1 });
    expect(find('WebApiJobs', { outcome: 'finished' })).toMatchObject({ WebApiJobs: 1 });
    expect(find('WebhookAttempts', { outcome: 'delivered' })).toMatchObject({
      WebhookAttempts: 1,
      WebhookFailures: 0,
    });
    expect(find('DeadLettered', { queue: 'document-received' })).toMatchObject({ DeadLettered: 1 });
  });
});
