import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { createEmfMetrics } from '../../shared/adapters/powertools/metrics.js';
import type { Log, LogFields } from '../../shared/core/log.js';
import { webhookEventId } from '../../shared/core/webhook/event.js';
import { serviceLog, useObservability } from '../../shared/lambda/observability.js';
import { DEMO_AUTH } from '../support/demo.js';
import { until } from '../support/until.js';
import { deliveryOutcomes, webhookDeliveries } from '../support/webhook-deliveries.js';
import {
  type ReceivedWebhook,
  startWebhookReceiver,
  type WebhookReceiver,
} from '../support/webhook-receiver.js';

/**
 * Webhook operations on the local stack (CONTRACT.md sections 3 and 6), on the embedded database
 * under `npm test` and on the T-SQL engine with packaged functions under `npm run test:tsql`:
 * secret rotation with two signatures during the overlap (checked with the Standard Webhooks
 * reference library), endpoints disabled after failing and enabled again, and the admin function
 * through the Lambda Invoke API (the SDK's LambdaClient and `npm run webhooks`).
 */

// Attempts at 0, ~1 and ~5 s. An endpoint failing for 3 s is disabled: the third attempt of a
// dead endpoint's first event disables it (2 s of margin either way). A rotation's overlap: 1.8 s.
const SCHEDULE = '1,4';
const hours = (seconds: number) => String(seconds / 3600);

let stack: LocalStack;
let receiver: WebhookReceiver;
let lambda: LambdaClient;
const execFileAsync = promisify(execFile);

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  stack = await startLocalStack({
    port: 0,
    env: {
      WEBHOOK_RETRY_SCHEDULE: SCHEDULE,
      WEBHOOK_SECRET_OVERLAP_HOURS: hours(1.8),
      WEBHOOK_DISABLE_AFTER_HOURS: hours(3),
    },
  });
  lambda = new LambdaClient({
    endpoint: stack.url,
    region: 'eu-central-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
});
afterAll(async () => {
  lambda?.destroy();
  await stack?.stop();
  await receiver?.close();
});

const deliveries = (documentId: number) => webhookDeliveries(stack.url, documentId);

/** What the ERP does: `PUT /_local/subjects/{id}/webhook`. */
async function changeSubject(subjectId: number, change: Record<string, unknown>) {
  const response = await fetch(`${stack.url}/_local/subjects/${subjectId}/webhook`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(change),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function documentReceived(subjectId: number, documentId: number) {
  const response = await fetch(`${stack.url}/_local/documents/received`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ subjectId, documentId }),
  });
  expect(response.status).toBe(202);
  return (await response.json()) as { webhookId: string };
}

/** The admin function through the Lambda Invoke API, as the SDK calls it. */
async function admin(event: Record<string, unknown>) {
  const result = await lambda.send(
    new InvokeCommand({
      FunctionName: 'webhookAdmin',
      Payload: new TextEncoder().encode(JSON.stringify(event)),
    }),
  );
  expect(result.StatusCode).toBe(200);
  expect(result.FunctionError).toBeUndefined();
  return JSON.parse(new TextDecoder().decode(result.Payload)) as Record<string, unknown> & {
    events?: Record<string, unknown>[];
    lastAttempts?: Record<string, unknown>[];
  };
}

/** Whether the Standard Webhooks reference library accepts the request under `secret` (raw UTF-8 key). */
function verifies(request: ReceivedWebhook, secret: string): boolean {
  try {
    new Webhook(secret, { format: 'raw' }).verify(request.body, request.headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('Secret rotation (local stack)', () => {
  it('signs with the new and the previous secret during the overlap, then with the new one only', async () => {
    expect((await changeSubject(21, { url: `${receiver.url}/rotation`, secret: 'old-secret' })).status).toBe(
      200,
    );
    await documentReceived(21, 21001);
    const [before] = await receiver.waitFor('/rotation', 1);
    expect(before!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/=]+$/);
    expect(verifies(before!, 'old-secret')).toBe(true);

    const changed = await changeSubject(21, { secret: 'new-secret' });
    expect(changed).toEqual({
      status: 200,
      body: { subjectId: 21, url: `${receiver.url}/rotation`, secret: 'new-secret' },
    });
    await documentReceived(21, 21002);
    const [, during] = await receiver.waitFor('/rotation', 2);
    const signatures = String(during!.headers['webhook-signature']).split(' ');
    expect(signatures).toHaveLength(2);
    // A receiver holding either secret verifies; the secret header carries the current one only.
    expect(verifies(during!, 'new-secret')).toBe(true);
    expect(verifies(during!, 'old-secret')).toBe(true);
    expect(verifies(during!, 'another-secret')).toBe(false);
    expect(during!.headers['x-peppol-webhook-secret']).toBe('new-secret');
    // The new secret's signature comes first (`v1,<new> v1,<previous>`).
    expect(
      verifies(
        { ...during!, headers: { ...during!.headers, 'webhook-signature': signatures[0] } },
        'new-secret',
      ),
    ).toBe(true);

    await sleep(2000);
    await documentReceived(21, 21003);
    const [, , after] = await receiver.waitFor('/rotation', 3);
    expect(String(after!.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verifies(after!, 'new-secret')).toBe(true);
    expect(verifies(after!, 'old-secret')).toBe(false);
    expect(deliveryOutcomes(await deliveries(21003))).toEqual(['delivered']);

    // The secret's last change shows in the status, the secrets themselves nowhere.
    const status = await admin({ action: 'status', tenant: 'demo', subjectId: 21 });
    expect(status).toMatchObject({ ok: true, state: 'enabled', subjectId: 21 });
    expect(Date.parse(String(status.secretChangedAt))).toBeGreaterThan(Date.now() - 60_000);
    expect(JSON.stringify(status)).not.toMatch(/old-secret|new-secret/);
  });

  it('never serves the secret memory and endpoint state through the Data API', async () => {
    for (const name of ['WEBHOOK_ENDPOINT', 'dbo.WEBHOOK_ENDPOINT', 'webhook_endpoint']) {
      const response = await fetch(`${stack.url}/demo/JsonAPI/Data/getData/${name}`, {
        headers: { authorization: DEMO_AUTH },
      });
      expect(response.status, name).toBe(404);
      expect(await response.text()).not.toContain('secret');
    }
    // The table exists (the rotation above used it) and holds the secrets: that is why.
    const rows = await stack.database.query(
      `SELECT "SECRET" FROM dbo."WEBHOOK_ENDPOINT" WHERE "SUBJECT_ID" = 21`,
    );
    expect(rows[0]?.SECRET).toBe('new-secret');
  });
});

describe('Failing endpoints (local stack)', () => {
  it('disables an endpoint whose attempts all failed for WEBHOOK_DISABLE_AFTER_HOURS, with a metric and one warning', async () => {
    const documents: Record<string, unknown>[] = [];
    const warnings: { message: string; fields: LogFields }[] = [];
    const previous: Log = serviceLog();
    useObservability({
      metrics: createEmfMetrics({ sink: (document) => documents.push(JSON.parse(document)) }),
      log: { ...previous, warn: (message, fields = {}) => warnings.push({ message, fields }) },
    });
    try {
      receiver.on('/dead', { status: 503 });
      await changeSubject(22, { url: `${receiver.url}/dead`, secret: 's-22' });
      await documentReceived(22, 22001);
      await until(
        'the last attempt',
        () => deliveries(22001),
        (rows) => rows.length >= 3,
        15_000,
      );
      expect(deliveryOutcomes(await deliveries(22001))).toEqual(['retrying', 'retrying', 'failed']);
      await until(
        'the disabling metric',
        async () => documents,
        (d) => d.some((x) => x.WebhookEndpointDisabled),
      );
    } finally {
      useObservability({ log: previous });
    }
    expect(documents.filter((d) => d.WebhookEndpointDisabled !== undefined)).toHaveLength(1);
    const disabledLines = warnings.filter((w) => w.message === 'webhook endpoint disabled');
    expect(disabledLines).toHaveLength(1);
    expect(disabledLines[0]!.fields).toMatchObject({ tenant: 'demo', subjectId: 22 });

    // Later events are recorded as disabled and neither sent nor retried.
    const status = await admin({ action: 'status', tenant: 'demo', subjectId: 22 });
    expect(status).toMatchObject({ ok: true, state: 'disabled' });
    expect(Date.parse(String(status.failingSince))).toBeLessThan(Date.parse(String(status.since)));
    expect(status.lastAttempts!.map((a) => a.outcome)).toEqual(['failed', 'retrying', 'retrying']);
    await documentReceived(22, 22002);
    await until(
      'the disabled record',
      () => deliveries(22002),
      (rows) => rows.length >= 1,
    );
    await sleep(1500);
    expect(deliveryOutcomes(await deliveries(22002))).toEqual(['disabled']);
    expect(receiver.receivedOn('/dead')).toHaveLength(3);

    // A new WEBHOOK_URL enables it again.
    receiver.on('/alive', { status: 200 });
    await changeSubject(22, { url: `${receiver.url}/alive` });
    await documentReceived(22, 22003);
    await receiver.waitFor('/alive', 1);
    await until(
      'the delivery',
      () => deliveries(22003),
      (rows) => rows.length >= 1,
    );
    expect(deliveryOutcomes(await deliveries(22003))).toEqual(['delivered']);
    expect(await admin({ action: 'status', tenant: 'demo', subjectId: 22 })).toMatchObject({
      state: 'enabled',
      failingSince: null,
    });
  });

  it('is enabled again by the admin enable, which also starts the failure count afresh', async () => {
    receiver.on('/flaky', { status: 500 });
    await changeSubject(23, { url: `${receiver.url}/flaky`, secret: 's-23' });
    await documentReceived(23, 23001);
    await until(
      'the last attempt',
      () => deliveries(23001),
      (rows) => rows.length >= 3,
      15_000,
    );
    await until(
      'the endpoint disabled',
      () => admin({ action: 'status', tenant: 'demo', subjectId: 23 }),
      (s) => s.state === 'disabled',
    );
    receiver.on('/flaky', { status: 200 });
    expect(await admin({ action: 'enable', tenant: 'demo', subjectId: 23 })).toEqual({
      ok: true,
      action: 'enable',
      tenant: 'demo',
      subjectId: 23,
      state: 'enabled',
      wasDisabled: true,
    });
    await documentReceived(23, 23002);
    await until(
      'the delivery',
      () => deliveries(23002),
      (rows) => rows.length >= 1,
    );
    expect(deliveryOutcomes(await deliveries(23002))).toEqual(['delivered']);
    expect(receiver.receivedOn('/flaky')).toHaveLength(4);
  });
});

describe('Admin function over the Lambda Invoke API (local stack)', () => {
  it('resends one event with the same webhook-id, as a new series of attempts, even once delivered', async () => {
    await changeSubject(24, { url: `${receiver.url}/resend`, secret: 's-24' });
    const { webhookId } = await documentReceived(24, 24001);
    const [first] = await receiver.waitFor('/resend', 1);
    await until(
      'the delivery',
      () => deliveries(24001),
      (rows) => rows.length >= 1,
    );

    const answer = await admin({ action: 'resend', tenant: 'demo', eventId: webhookId });
    expect(answer).toMatchObject({
      ok: true,
      action: 'resend',
      eventId: webhookId,
      subjectId: 24,
      documentId: 24001,
    });
    const [, again] = await receiver.waitFor('/resend', 2);
    expect(again!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    expect(verifies(again!, 's-24')).toBe(true);
    await until(
      'the resend',
      () => deliveries(24001),
      (rows) => rows.length >= 2,
    );
    expect(deliveryOutcomes(await deliveries(24001))).toEqual(['delivered', 'resent']);

    // Unknown event: an answer that says so, not a crash.
    const unknown = webhookEventId({ tenant: 'demo', subjectId: 24, documentId: 99_999_999 });
    expect(await admin({ action: 'resend', tenant: 'demo', eventId: unknown })).toEqual({
      ok: false,
      error: `No event ${unknown} in WEBHOOK_DELIVERY of tenant demo`,
    });
  });

  it('recovers every failed or disabled event of a subject since a time: a dry run lists, then it sends', async () => {
    const since = new Date(Date.now() - 1000).toISOString();
    receiver.on('/outage', { status: 500 });
    await changeSubject(25, { url: `${receiver.url}/outage`, secret: 's-25' });
    await documentReceived(25, 25001);
    await until(
      'the last attempt',
      () => deliveries(25001),
      (rows) => rows.length >= 3,
      15_000,
    );
    // Disabled by now: the next event is recorded as disabled.
    await documentReceived(25, 25002);
    await until(
      'the disabled record',
      () => deliveries(25002),
      (rows) => rows.length >= 1,
    );
    // A delivered event of another subject is not recovered.
    await changeSubject(26, { url: `${receiver.url}/fine`, secret: 's-26' });
    await documentReceived(26, 26001);
    await receiver.waitFor('/fine', 1);

    const dryRun = await admin({ action: 'recover', tenant: 'demo', since, subjectId: 25, dryRun: true });
    expect(dryRun).toMatchObject({ ok: true, dryRun: true, count: 2, truncated: false });
    expect(dryRun.events!.map((e) => [e.documentId, e.lastOutcome])).toEqual([
      [25001, 'failed'],
      [25002, 'disabled'],
    ]);
    await sleep(500);
    expect(receiver.receivedOn('/outage')).toHaveLength(3);
    const everything = await admin({ action: 'recover', tenant: 'demo', since, dryRun: true });
    expect(everything.events!.map((e) => e.documentId)).not.toContain(26001);

    // The receiver is back; the operator enables the endpoint and recovers.
    receiver.on('/outage', { status: 200 });
    await admin({ action: 'enable', tenant: 'demo', subjectId: 25 });
    const recovered = await admin({ action: 'recover', tenant: 'demo', since, subjectId: 25 });
    expect(recovered).toMatchObject({ ok: true, dryRun: false, count: 2, sent: 2 });
    await until(
      'both sent again',
      () => deliveries(25002),
      (rows) => deliveryOutcomes(rows).includes('resent'),
    );
    await until(
      'both sent again',
      () => deliveries(25001),
      (rows) => deliveryOutcomes(rows).includes('resent'),
    );
    const bodies = receiver
      .receivedOn('/outage')
      .slice(3)
      .map((r) => r.body)
      .sort();
    expect(bodies).toEqual(['25001', '25002']);
    // Nothing left to recover.
    expect(
      await admin({ action: 'recover', tenant: 'demo', since, subjectId: 25, dryRun: true }),
    ).toMatchObject({
      count: 0,
    });
  });

  it('answers a bad event with what is wrong, never a crash', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ tenant: 'demo' }, '"action" must be one of resend, recover, enable, status, notify'],
      [{ action: 'status', tenant: 'nope' }, '"subjectId" must be a positive integer up to 2147483647'],
      [{ action: 'status', tenant: 'nope', subjectId: 1 }, 'Unknown tenant "nope"'],
      [
        { action: 'status', tenant: 'demo', subjectId: 999_999 },
        'Subject 999999 does not exist in tenant demo',
      ],
      [{ action: 'recover', tenant: 'demo', since: 'monday' }, '"since" must be an ISO time'],
      // Outside what the databases hold, or not in the calendar: bad input, named as such.
      [
        { action: 'recover', tenant: 'demo', since: '0000-01-01T00:00:00Z' },
        '"since" must be from 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z',
      ],
      [
        { action: 'recover', tenant: 'demo', since: '9999-12-31T23:59:59-14:00' },
        '"since" must be from 1970-01-01T00:00:00.000Z',
      ],
      [{ action: 'recover', tenant: 'demo', since: '2025-02-30T00:00:00Z' }, '"since" must be an ISO time'],
      [{ action: 'resend', tenant: 'demo', eventId: "x'; DROP TABLE y" }, '"eventId" must be an event id'],
    ];
    for (const [event, error] of cases) {
      const answer = await admin(event);
      expect(answer.ok, JSON.stringify(event)).toBe(false);
      expect(String(answer.error)).toContain(error);
    }
  });

  it('serves the Invoke API for functions without an HTTP route only, as AWS answers', async () => {
    await expect(
      lambda.send(
        new InvokeCommand({ FunctionName: 'dataGetData', Payload: new TextEncoder().encode('{}') }),
      ),
    ).rejects.toMatchObject({ name: 'ResourceNotFoundException' });
    await expect(
      lambda.send(
        new InvokeCommand({ FunctionName: 'noSuchFunction', Payload: new TextEncoder().encode('{}') }),
      ),
    ).rejects.toMatchObject({ name: 'ResourceNotFoundException' });
    // An SQS function takes its event too: an empty batch answers no failures.
    const batch = await lambda.send(
      new InvokeCommand({
        FunctionName: 'deliverWebhook',
        Payload: new TextEncoder().encode('{"Records":[]}'),
      }),
    );
    expect(JSON.parse(new TextDecoder().decode(batch.Payload))).toEqual({ batchItemFailures: [] });
  });

  it('is what `npm run webhooks` calls, against the local stack', async () => {
    await changeSubject(27, { url: `${receiver.url}/cli`, secret: 's-27' });
    await documentReceived(27, 27001);
    await receiver.waitFor('/cli', 1);
    await until(
      'the delivery',
      () => deliveries(27001),
      (rows) => rows.length >= 1,
    );
    const { stdout } = await execFileAsync(
      'npm',
      ['run', '-s', 'webhooks', '--', 'status', '--subject', '27', '--endpoint', stack.url],
      { env: { ...process.env, NODE_OPTIONS: '' } },
    );
    const status = JSON.parse(stdout) as { ok: boolean; state: string; lastAttempts: { outcome: string }[] };
    expect(status).toMatchObject({ ok: true, state: 'enabled', subjectId: 27 });
    expect(status.lastAttempts.map((a) => a.outcome)).toEqual(['delivered']);
    // A refusal: its answer printed, exit code 1.
    const refused = await execFileAsync(
      'npm',
      ['run', '-s', 'webhooks', '--', 'status', '--subject', '999999', '--endpoint', stack.url],
      { env: { ...process.env, NODE_OPTIONS: '' } },
    ).catch((error: { code: number; stdout: string }) => error);
    expect(refused).toMatchObject({ code: 1 });
    expect(JSON.parse((refused as { stdout: string }).stdout)).toEqual({
      ok: false,
      error: 'Subject 999999 does not exist in tenant demo',
    });
  });
});

describe('PUT /_local/subjects/{subjectId}/webhook', () => {
  it('changes either value, clears with null, and refuses what it cannot store', async () => {
    expect(await changeSubject(28, { url: 'https://erp.example.cz/hook', secret: 'abc' })).toEqual({
      status: 200,
      body: { subjectId: 28, url: 'https://erp.example.cz/hook', secret: 'abc' },
    });
    expect(await changeSubject(28, { secret: null })).toEqual({
      status: 200,
      body: { subjectId: 28, url: 'https://erp.example.cz/hook', secret: null },
    });
    expect((await changeSubject(999_999, { url: null })).status).toBe(404);
    expect((await changeSubject(28, { url: 5 })).status).toBe(400);
    expect((await changeSubject(28, { url: 'x'.repeat(501) })).status).toBe(400);
    expect((await changeSubject(28, { name: 'x' })).status).toBe(400);
    const bad = await fetch(`${stack.url}/_local/subjects/abc/webhook`, { method: 'PUT', body: '{}' });
    expect(bad.status).toBe(400);
    for (const body of ['[]', 'not json', '']) {
      const notObject = await fetch(`${stack.url}/_local/subjects/28/webhook`, { method: 'PUT', body });
      expect([body, notObject.status, ((await notObject.json()) as { message: string }).message]).toEqual([
        body,
        400,
        expect.stringContaining('The body must be a JSON object like {"url"'),
      ]);
    }
  });
});
