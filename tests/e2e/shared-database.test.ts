/**
 * Two tenants on one database (CONTRACT 4c: every record the service keeps is its tenant's), as an
 * ERP that hosts several companies in one database is registered: `demo` and `acme` name the same
 * database, and each has a Data API user `demo` with the same password. Every route of every
 * resource the service keeps answers 404 across tenants (subscriptions; the delivery records read
 * through the Data API; the admin function's events), limits are counted per tenant, and a change
 * notifies each tenant's subscriptions under its own name. On the embedded database under
 * `npm test`, on the T-SQL engine with the packaged zips and the least-privileged login under
 * `npm run test:tsql`. On main before this, acme listed and rotated demo's subscription.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOCUMENT_RECEIVED_QUEUE } from '../../infra/local/queues.js';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { documentReceivedMessage, webhookEventId } from '../../shared/core/webhook/event.js';
import { DEMO_AUTH } from '../support/demo.js';
import { until } from '../support/until.js';
import { envelope, signedCall } from '../support/web-api.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const TENANTS = ['demo', 'acme'] as const;
type Tenant = (typeof TENANTS)[number];
const MAX_SUBSCRIPTIONS = 2;
// Rows of this run's own.
const BASE = 700_000 + Math.floor(Math.random() * 90_000) * 10;

let stack: LocalStack;
let receiver: WebhookReceiver;
let dir: string;
let sqs: SQSClient;
let lambda: LambdaClient;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'shared-database-'));
  const registry = JSON.parse(await readFile('infra/local/tenants.json', 'utf8'));
  registry.tenants.demo.maxSubscriptions = MAX_SUBSCRIPTIONS;
  // The same database (the stack fills in the demo connection wherever a tenant names it) and a
  // user of the same name and password.
  registry.tenants.acme = structuredClone(registry.tenants.demo);
  const file = join(dir, 'tenants.json');
  await writeFile(file, JSON.stringify(registry));
  receiver = await startWebhookReceiver();
  stack = await startLocalStack({ port: 0, env: { TENANT_REGISTRY_FILE: file } });
  sqs = new SQSClient({ endpoint: `http://127.0.0.1:${stack.emulator.port}` });
  lambda = new LambdaClient({
    endpoint: stack.url,
    region: 'eu-central-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
});
afterAll(async () => {
  lambda?.destroy();
  sqs?.destroy();
  await stack?.stop();
  await receiver?.close();
  delete process.env.TENANT_REGISTRY_FILE;
  if (dir) await rm(dir, { recursive: true, force: true });
});

const call = (tenant: Tenant, path: string, init: RequestInit = {}) =>
  fetch(`${stack.url}/${tenant}/JsonAPI${path}`, {
    ...init,
    headers: { authorization: DEMO_AUTH, 'content-type': 'application/json', ...init.headers },
  });
const errorCode = async (response: Response) =>
  ((await response.json()) as { error: { code: string } }).error.code;

interface Subscription {
  id: string;
  state: string;
  secret?: string;
  secretChangedAt: string | null;
}

async function subscribe(tenant: Tenant, path: string): Promise<Response> {
  return call(tenant, '/Subscriptions', {
    method: 'POST',
    body: JSON.stringify({ source: 'SUBJECT', url: `${receiver.url}${path}` }),
  });
}

const bodyOf = (path: string) => receiver.receivedOn(path).map((r) => JSON.parse(r.body));

/** A data source's rows as `tenant`'s user reads them. */
async function rows(tenant: Tenant, source: string, condition: string): Promise<Record<string, unknown>[]> {
  const response = await call(
    tenant,
    `/Data/getDataWithCondition/${source}?condition=${encodeURIComponent(condition)}`,
  );
  expect(response.status, await response.clone().text()).toBe(200);
  return ((await response.json()) as Record<string, Record<string, unknown>[]>)[source]!;
}

async function admin(event: Record<string, unknown>) {
  const result = await lambda.send(
    new InvokeCommand({
      FunctionName: 'webhookAdmin',
      Payload: new TextEncoder().encode(JSON.stringify(event)),
    }),
  );
  expect(result.FunctionError).toBeUndefined();
  return JSON.parse(new TextDecoder().decode(result.Payload)) as Record<string, unknown>;
}

const made: Record<Tenant, Subscription[]> = { demo: [], acme: [] };

describe('Two tenants on one database', () => {
  it('counts maxSubscriptions per tenant: one at its limit leaves the other its own', async () => {
    for (const tenant of TENANTS) {
      for (const n of [1, 2]) {
        const response = await subscribe(tenant, `/${tenant}-${n}`);
        expect(response.status, `${tenant} ${n}: ${await response.clone().text()}`).toBe(201);
        made[tenant].push((await response.json()) as Subscription);
      }
      const over = await subscribe(tenant, `/${tenant}-3`);
      expect(over.status, tenant).toBe(409);
      expect(await errorCode(over)).toBe('subscription_limit');
    }
    // Each ping names the tenant whose subscription it is.
    for (const tenant of TENANTS) {
      for (const n of [1, 2]) {
        const [ping] = await receiver.waitFor(`/${tenant}-${n}`, 1);
        expect(JSON.parse(ping!.body)).toMatchObject({ type: 'subscription.ping', tenant });
      }
    }
  });

  it("answers 404 on every route of another tenant's subscription, and lists only the caller's own", async () => {
    for (const [tenant, other] of [
      ['acme', 'demo'],
      ['demo', 'acme'],
    ] as const) {
      const listed = await call(tenant, '/Subscriptions');
      expect(listed.status).toBe(200);
      const ids = ((await listed.json()) as { subscriptions: Subscription[] }).subscriptions.map((s) => s.id);
      expect(ids.sort()).toEqual(made[tenant].map((s) => s.id).sort());
      const theirs = made[other][0]!.id;
      const routes: [string, string][] = [
        ['GET', `/Subscriptions/${theirs}`],
        ['POST', `/Subscriptions/${theirs}/rotate`],
        ['POST', `/Subscriptions/${theirs}/enable`],
        ['DELETE', `/Subscriptions/${theirs}`],
      ];
      for (const [method, path] of routes) {
        const response = await call(tenant, path, { method });
        expect(response.status, `${tenant} ${method} ${path}`).toBe(404);
        expect(await errorCode(response)).toBe('subscription_not_found');
      }
      // Untouched: still there for its owner, its secret never rotated.
      const own = await call(other, `/Subscriptions/${theirs}`);
      expect(own.status).toBe(200);
      expect(((await own.json()) as Subscription).secretChangedAt).toBeNull();
    }
  });

  it("tells each tenant's subscriptions of a change under their own tenant's name", async () => {
    for (const tenant of TENANTS) {
      for (const s of made[tenant]) {
        await until(
          `${s.id} active`,
          async () => ((await (await call(tenant, `/Subscriptions/${s.id}`)).json()) as Subscription).state,
          (state) => state === 'active',
          20_000,
        );
      }
    }
    const before = Object.fromEntries(
      TENANTS.flatMap((t) => [1, 2].map((n) => [`/${t}-${n}`, receiver.receivedOn(`/${t}-${n}`).length])),
    );
    const write = await fetch(`${stack.url}/_local/erp/writes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        writes: [{ table: 'SUBJECT', op: 'insert', row: { ID: BASE + 1, NAZEV: 'Sdílená s.r.o.' } }],
      }),
    });
    expect(write.status).toBe(200);
    for (const tenant of TENANTS) {
      for (const [index, s] of made[tenant].entries()) {
        const path = `/${tenant}-${index + 1}`;
        const all = await receiver.waitFor(path, before[path]! + 1, 20_000);
        const changed = all.slice(before[path]).map((r) => JSON.parse(r.body));
        expect(changed[0]).toMatchObject({ type: 'table.changed', tenant, subscription: s.id });
      }
    }
    // Never an event of one tenant's subscription under the other's name.
    for (const tenant of TENANTS) {
      for (const n of [1, 2]) {
        expect(bodyOf(`/${tenant}-${n}`).every((event) => event.tenant === tenant)).toBe(true);
      }
    }
  });

  it("reads, counts and pages only the tenant's own notification attempts through the Data API", async () => {
    for (const [tenant, other] of [
      ['acme', 'demo'],
      ['demo', 'acme'],
    ] as const) {
      const ownId = made[tenant][0]!.id;
      const theirId = made[other][0]!.id;
      const own = await rows(tenant, 'SVC_NOTIFICATION_DELIVERY', `SUBSCRIPTION_ID = '${ownId}'`);
      expect(own.length).toBeGreaterThan(0);
      expect(own.every((row) => row.TENANT === tenant)).toBe(true);
      expect(await rows(tenant, 'SVC_NOTIFICATION_DELIVERY', `SUBSCRIPTION_ID = '${theirId}'`)).toEqual([]);
      // Every way of reading the table sees the same rows: the tenant's own.
      const count = await call(tenant, '/Data/getRowsCount/SVC_NOTIFICATION_DELIVERY');
      const counted = ((await count.json()) as Record<string, [{ rowsCount: number }]>)
        .SVC_NOTIFICATION_DELIVERY![0].rowsCount;
      const all = await call(tenant, '/Data/getData/SVC_NOTIFICATION_DELIVERY');
      const every = ((await all.json()) as Record<string, Record<string, unknown>[]>)
        .SVC_NOTIFICATION_DELIVERY!;
      expect(every).toHaveLength(counted);
      expect(every.every((row) => row.TENANT === tenant)).toBe(true);
      const page = await call(
        tenant,
        `/Data/getDataPaginate/SVC_NOTIFICATION_DELIVERY?fromRow=1&rows=${counted}`,
      );
      expect(((await page.json()) as Record<string, unknown[]>).SVC_NOTIFICATION_DELIVERY).toEqual(every);
    }
  });

  it("answers 997 for a tenant's own journal ids only, and keeps its replay claims and journal owners to itself", async () => {
    // The same application in both registry entries (as an ERP that hosts several companies might
    // list it): its calls are still each tenant's.
    const getData = async (tenant: Tenant, vltyp: number, params: Record<string, unknown>[]) => {
      const call = signedCall(envelope(vltyp, params));
      const response = await fetch(`${stack.url}/${tenant}/WebAPI/getData`, {
        method: 'POST',
        headers: call.headers,
        body: call.body,
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const ids = {} as Record<Tenant, number>;
    for (const tenant of TENANTS) {
      const answer = await getData(tenant, 1001, [{ ico: '25596641' }]);
      expect(answer.status, tenant).toBe(200);
      ids[tenant] = answer.body.id as number;
    }
    for (const [tenant, other] of [
      ['acme', 'demo'],
      ['demo', 'acme'],
    ] as const) {
      const own = await getData(tenant, 997, [{ idws_journal: ids[tenant] }]);
      expect(own.status).toBe(200);
      expect(own.body.vlResult).toBe(1);
      const theirs = await getData(tenant, 997, [{ idws_journal: ids[other] }]);
      expect(theirs.status, `${tenant} asking for ${other}'s journal id`).toBe(404);
      expect(JSON.stringify(theirs.body)).toContain('"errorCode":"111"');
      // Who owns which journal row, and in which trace (CONTRACT 8a), readable per tenant like the
      // other records.
      const owners = await rows(tenant, 'SVC_JOURNAL', `JOURNAL_ID IN (${ids.demo}, ${ids.acme})`);
      expect(owners).toEqual([
        { JOURNAL_ID: ids[tenant], TENANT: tenant, TRACE_ID: expect.stringMatching(/^[0-9a-f]{32}$/) },
      ]);
    }
    // The identical signed bytes sent to each tenant: a replay of neither.
    const call = signedCall(envelope(1001, [{ ico: '25596641' }]));
    for (const tenant of TENANTS) {
      const response = await fetch(`${stack.url}/${tenant}/WebAPI/getData`, {
        method: 'POST',
        headers: call.headers,
        body: call.body,
      });
      expect(response.status, tenant).toBe(200);
    }
  });

  it("keeps each tenant's receipt webhook attempts and endpoint state to itself", async () => {
    const queueUrl = stack.queueUrls.get(DOCUMENT_RECEIVED_QUEUE)!;
    const events = Object.fromEntries(
      TENANTS.map((tenant, i) => [tenant, { tenant, subjectId: 1, documentId: BASE + 10 + i }]),
    ) as Record<Tenant, { tenant: Tenant; subjectId: number; documentId: number }>;
    for (const event of Object.values(events)) {
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: documentReceivedMessage(event),
          MessageGroupId: event.tenant,
        }),
      );
    }
    for (const [tenant, other] of [
      ['acme', 'demo'],
      ['demo', 'acme'],
    ] as const) {
      const own = await until(
        `${tenant}'s delivery`,
        () => rows(tenant, 'WEBHOOK_DELIVERY', `DOCUMENT_ID = ${events[tenant].documentId}`),
        (found) => found.some((row) => row.OUTCOME === 'delivered'),
        20_000,
      );
      expect(own.every((row) => row.TENANT === tenant)).toBe(true);
      expect(await rows(tenant, 'WEBHOOK_DELIVERY', `DOCUMENT_ID = ${events[other].documentId}`)).toEqual([]);
      // The admin function, asked for the tenant, knows only its events and attempts.
      const status = await admin({ action: 'status', tenant, subjectId: 1 });
      const attempted = (status.lastAttempts as { eventId: string }[]).map((a) => a.eventId);
      expect(attempted).toContain(webhookEventId(events[tenant]));
      expect(attempted).not.toContain(webhookEventId(events[other]));
      const resend = await admin({ action: 'resend', tenant, eventId: webhookEventId(events[other]) });
      expect(resend).toMatchObject({ ok: false });
      expect(String(resend.error)).toContain('No event');
    }
  });
});
