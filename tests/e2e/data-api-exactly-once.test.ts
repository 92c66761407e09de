import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { hashPassword } from '../../shared/core/passwords.js';
import { DEMO_AUTH, sqlOn, useDemoTenantsWith } from '../support/demo.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

/**
 * CONTRACT 5a on the Data API's writes, through the local stack as a client calls it, on the
 * embedded database (npm test) and on the T-SQL engine (npm run test:tsql): `setFile` and a
 * subscription's creation under an `Idempotency-Key` run once, their answer recorded with their
 * effects (the SVCDOC row and the procedure's writes; the subscription), and every retry gets that
 * answer byte for byte.
 */
const OTHER_AUTH = `Basic ${Buffer.from('other:other-password').toString('base64')}`;

let stack: LocalStack;
let receiver: WebhookReceiver;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  // Room for 20 calls at once of one tenant: the floods below meet the key, not the fair share.
  stack = await startLocalStack({
    port: 0,
    env: { TENANT_CONCURRENT_REQUESTS: '24', REQUEST_FUNCTION_CONCURRENCY: '25' },
  });
  const passwordHash = await hashPassword('other-password');
  useDemoTenantsWith(stack.registry, (demo) => ({
    // A second Data API user of the demo tenant: its keys are its own.
    demo: {
      ...demo,
      dataApiUsers: [...(demo.dataApiUsers as unknown[]), { name: 'other', passwordHash }],
    },
    failing: { ...demo, procedures: ['DEMO_FILE_RECEIVED', 'DEMO_FILE_FAIL'] },
  }));
});
afterAll(async () => {
  // The subscriptions this run made, so that the tenant's limit is not used up by reruns.
  for (const auth of [DEMO_AUTH, OTHER_AUTH]) {
    const listed = await fetch(`${stack.url}/demo/JsonAPI/Subscriptions`, {
      headers: { authorization: auth },
    })
      .then((r) => r.json() as Promise<{ subscriptions: { id: string; url: string }[] }>)
      .catch(() => ({ subscriptions: [] }));
    for (const { id, url } of listed.subscriptions ?? []) {
      if (!url.startsWith(receiver.url)) continue;
      await fetch(`${stack.url}/demo/JsonAPI/Subscriptions/${id}`, {
        method: 'DELETE',
        headers: { authorization: auth },
      });
    }
  }
  await stack?.stop();
  await receiver?.close();
  delete process.env.TENANT_CONCURRENT_REQUESTS;
  delete process.env.REQUEST_FUNCTION_CONCURRENCY;
});

let keys = 0;
/** A key and a name of this run's own (the suites may run again on the same database). */
const unique = (label: string) => `${label}-${process.pid}-${Date.now().toString(36)}-${++keys}`;

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

const answered = async (response: Response): Promise<Answer> => ({
  status: response.status,
  headers: response.headers,
  text: await response.text(),
});

const errorOf = (answer: Answer) =>
  (JSON.parse(answer.text) as { error: { code: string; fileGUID?: string } }).error;

const sql = () => sqlOn(stack.database);
const count = async (rows: Promise<Record<string, unknown>[]>) => Number((await rows)[0]!.n);

interface Upload {
  readonly content?: Buffer;
  readonly name: string;
  readonly type?: string;
  readonly procedure?: string;
  readonly tenant?: string;
  readonly auth?: string;
}

/** `setFile` with a multipart body of its own (a new boundary each time, as a client's retry has). */
function setFile(upload: Upload, key?: string): Promise<Answer> {
  const form = new FormData();
  const content = upload.content ?? Buffer.from(`content of ${upload.name}`);
  form.append('file', new Blob([content], { type: upload.type ?? 'text/plain' }), upload.name);
  const query = upload.procedure ? `?userDBProcedure=${upload.procedure}` : '';
  return fetch(`${stack.url}/${upload.tenant ?? 'demo'}/JsonAPI/File/setFile${query}`, {
    method: 'POST',
    headers: {
      authorization: upload.auth ?? DEMO_AUTH,
      ...(key === undefined ? {} : { 'idempotency-key': key }),
    },
    body: form,
  }).then(answered);
}

const storedRows = (name: string) =>
  count(sql()`SELECT CAST(COUNT(*) AS int) AS n FROM dbo."SVCDOC" WHERE "FILENAME" = ${name}`);
const procedureCalls = (guid: string) =>
  count(sql()`SELECT CAST(COUNT(*) AS int) AS n FROM dbo."DEMO_FILE_EVENT" WHERE "FILEGUID" = ${guid}`);

/** A retry's answer: the first's bytes, status and type, with `Idempotent-Replayed: true`. */
function expectReplayOf(again: Answer, first: Answer): void {
  expect(again.status).toBe(first.status);
  expect(again.text).toBe(first.text);
  expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
  expect(again.headers.get('idempotent-replayed')).toBe('true');
}

describe('Exactly once on setFile (CONTRACT 5a)', () => {
  it('stores a file and calls its procedure once: a retry (another boundary) gets the first answer byte for byte, replayed', async () => {
    const name = `${unique('once')}.txt`;
    const key = unique('file-once');
    const upload = { name, procedure: 'DEMO_FILE_RECEIVED' };
    const first = await setFile(upload, key);
    expect(first.status, first.text).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const { fileGUID } = JSON.parse(first.text) as { fileGUID: string };
    for (let retry = 0; retry < 3; retry++) expectReplayOf(await setFile(upload, key), first);
    // The quoted form of the same key is the same key.
    expectReplayOf(await setFile(upload, `"${key}"`), first);
    expect(await storedRows(name)).toBe(1);
    expect(await procedureCalls(fileGUID)).toBe(1);
  });

  it("replays a failing procedure's 502 with the same fileGUID, and stores the file once", async () => {
    const name = `${unique('fails')}.txt`;
    const key = unique('file-fails');
    const upload = { name, procedure: 'DEMO_FILE_FAIL', tenant: 'failing' };
    const first = await setFile(upload, key);
    expect(first.status, first.text).toBe(502);
    expect(errorOf(first).code).toBe('procedure_failed');
    const again = await setFile(upload, key);
    expectReplayOf(again, first);
    expect(errorOf(again).fileGUID).toBe(errorOf(first).fileGUID);
    expect(await storedRows(name)).toBe(1);
    // The file stays downloadable, as without a key.
    const kept = await fetch(`${stack.url}/failing/JsonAPI/File/getFile/${errorOf(first).fileGUID}`, {
      headers: { authorization: DEMO_AUTH },
    });
    expect(kept.status).toBe(200);
    await kept.arrayBuffer();
  });

  it('refuses the same key with another file, name, type or procedure: 422 idempotency_key_reused, storing nothing', async () => {
    const name = `${unique('reuse')}.txt`;
    const key = unique('file-reuse');
    const content = randomBytes(64);
    expect((await setFile({ name, content }, key)).status).toBe(200);
    const others: Upload[] = [
      { name, content: randomBytes(64) },
      { name: `${name}.other`, content },
      { name, content, type: 'application/xml' },
      { name, content, procedure: 'DEMO_FILE_RECEIVED' },
    ];
    for (const other of others) {
      const refused = await setFile(other, key);
      expect(refused.status, refused.text).toBe(422);
      expect(errorOf(refused).code).toBe('idempotency_key_reused');
      expect(refused.headers.get('idempotent-replayed')).toBeNull();
    }
    expect(await storedRows(name)).toBe(1);
    expect(await storedRows(`${name}.other`)).toBe(0);
  });

  it('refuses a malformed or empty key with 400 invalid_idempotency_key, storing nothing; a refused call records nothing', async () => {
    const name = `${unique('malformed')}.txt`;
    for (const key of ['', '   ', 'with space', 'é', '"open', '"a"b', 'x'.repeat(256)]) {
      const refused = await setFile({ name }, key);
      expect(refused.status, `${JSON.stringify(key)}: ${refused.text}`).toBe(400);
      expect(errorOf(refused).code).toBe('invalid_idempotency_key');
    }
    expect(await storedRows(name)).toBe(0);
    // A call refused before anything ran (a procedure not allowed) leaves the key free: corrected, it runs.
    const key = unique('file-corrected');
    const notAllowed = await setFile({ name, procedure: 'DEMO_FILE_FAIL' }, key);
    expect(notAllowed.status).toBe(400);
    const corrected = await setFile({ name }, key);
    expect(corrected.status, corrected.text).toBe(200);
    expect(corrected.headers.get('idempotent-replayed')).toBeNull();
    expect(await storedRows(name)).toBe(1);
  });

  it("keeps keys apart per caller: another user's equal key is another key", async () => {
    const name = `${unique('callers')}.txt`;
    const key = unique('file-callers');
    const mine = await setFile({ name }, key);
    const theirs = await setFile({ name, auth: OTHER_AUTH }, key);
    expect([mine.status, theirs.status]).toEqual([200, 200]);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect(JSON.parse(theirs.text).fileGUID).not.toBe(JSON.parse(mine.text).fileGUID);
    expect(await storedRows(name)).toBe(2);
  });

  it('stores one file of 20 concurrent calls under one key: each answer is the record or 409 with Retry-After', async () => {
    const name = `${unique('flood')}.txt`;
    const key = unique('file-flood');
    const upload = { name, procedure: 'DEMO_FILE_RECEIVED' };
    const answers = await Promise.all(Array.from({ length: 20 }, () => setFile(upload, key)));
    const ok = answers.filter((a) => a.status === 200);
    const busy = answers.filter((a) => a.status === 409);
    expect(ok.length + busy.length, answers.map((a) => `${a.status} ${a.text}`).join('\n')).toBe(20);
    expect(new Set(ok.map((a) => a.text)).size).toBe(1);
    expect(ok.filter((a) => a.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    for (const refusal of busy) {
      expect(errorOf(refusal).code).toBe('idempotency_key_in_progress');
      expect(Number(refusal.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
    expect(await storedRows(name)).toBe(1);
    const { fileGUID } = JSON.parse(ok[0]!.text) as { fileGUID: string };
    expect(await procedureCalls(fileGUID)).toBe(1);
    expectReplayOf(await setFile(upload, key), ok[0]!);
  });

  it('stores a file each time without a key, as before', async () => {
    const name = `${unique('plain')}.txt`;
    const first = await setFile({ name });
    const second = await setFile({ name });
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(second.headers.get('idempotent-replayed')).toBeNull();
    expect(JSON.parse(second.text).fileGUID).not.toBe(JSON.parse(first.text).fileGUID);
    expect(await storedRows(name)).toBe(2);
  });
});

interface Created {
  id: string;
  url: string;
  secret: string;
}

function subscribe(url: string, key?: string, auth = DEMO_AUTH, source = 'SUBJECT'): Promise<Answer> {
  return fetch(`${stack.url}/demo/JsonAPI/Subscriptions`, {
    method: 'POST',
    headers: {
      authorization: auth,
      'content-type': 'application/json',
      ...(key === undefined ? {} : { 'idempotency-key': key }),
    },
    body: JSON.stringify({ source, url }),
  }).then(answered);
}

const subscriptionsOf = (url: string) =>
  count(sql()`SELECT CAST(COUNT(*) AS int) AS n FROM dbo."SVC_SUBSCRIPTION" WHERE "URL" = ${url}`);

describe('Exactly once on a subscription’s creation (CONTRACT 5a)', () => {
  it('makes one subscription: a retry gets the same id and secret byte for byte, replayed, with its Location', async () => {
    const url = `${receiver.url}/${unique('once')}`;
    const key = unique('sub-once');
    const first = await subscribe(url, key);
    expect(first.status, first.text).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const created = JSON.parse(first.text) as Created;
    expect(created.secret).toMatch(/^whsec_/);
    for (let retry = 0; retry < 2; retry++) {
      const again = await subscribe(url, key);
      expectReplayOf(again, first);
      expect(again.headers.get('location')).toBe(first.headers.get('location'));
      expect(again.headers.get('cache-control')).toBe(first.headers.get('cache-control'));
    }
    expect(await subscriptionsOf(created.url)).toBe(1);
    // The one ping of the one subscription reaches the receiver. (Only pings are counted: other
    // suites on the shared T-SQL database write SUBJECT, and a table.changed may follow.)
    const path = new URL(url).pathname;
    const pings = () =>
      receiver.receivedOn(path).filter((post) => JSON.parse(post.body).type === 'subscription.ping');
    for (let waited = 0; waited < 100 && pings().length === 0; waited++) await sleep(100);
    await sleep(300);
    expect(pings()).toHaveLength(1);
  });

  it('refuses the same key with another body 422, a malformed key 400, making nothing', async () => {
    const url = `${receiver.url}/${unique('reuse')}`;
    const key = unique('sub-reuse');
    expect((await subscribe(url, key)).status).toBe(201);
    const other = await subscribe(`${url}-other`, key);
    expect(other.status, other.text).toBe(422);
    expect(errorOf(other).code).toBe('idempotency_key_reused');
    expect(await subscriptionsOf(`${url}-other`)).toBe(0);
    for (const bad of ['', 'two words', 'ü']) {
      const refused = await subscribe(`${url}-bad`, bad);
      expect(refused.status, refused.text).toBe(400);
      expect(errorOf(refused).code).toBe('invalid_idempotency_key');
    }
    expect(await subscriptionsOf(`${url}-bad`)).toBe(0);
  });

  it("keeps keys apart per caller: another user's equal key makes its own subscription", async () => {
    const url = `${receiver.url}/${unique('callers')}`;
    const key = unique('sub-callers');
    const mine = await subscribe(url, key);
    const theirs = await subscribe(url, key, OTHER_AUTH);
    expect([mine.status, theirs.status]).toEqual([201, 201]);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect((JSON.parse(theirs.text) as Created).id).not.toBe((JSON.parse(mine.text) as Created).id);
    expect(await subscriptionsOf((JSON.parse(mine.text) as Created).url)).toBe(2);
  });

  it('makes one subscription of 20 concurrent calls under one key: each answer is the record or 409 with Retry-After', async () => {
    const url = `${receiver.url}/${unique('flood')}`;
    const key = unique('sub-flood');
    const answers = await Promise.all(Array.from({ length: 20 }, () => subscribe(url, key)));
    const ok = answers.filter((a) => a.status === 201);
    const busy = answers.filter((a) => a.status === 409);
    expect(ok.length + busy.length, answers.map((a) => `${a.status} ${a.text}`).join('\n')).toBe(20);
    expect(new Set(ok.map((a) => a.text)).size).toBe(1);
    expect(ok.filter((a) => a.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    for (const refusal of busy) {
      expect(errorOf(refusal).code).toBe('idempotency_key_in_progress');
      expect(Number(refusal.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
    expect(await subscriptionsOf((JSON.parse(ok[0]!.text) as Created).url)).toBe(1);
  });

  it('makes a subscription each time without a key, as before', async () => {
    const url = `${receiver.url}/${unique('plain')}`;
    const first = await subscribe(url);
    const second = await subscribe(url);
    expect([first.status, second.status]).toEqual([201, 201]);
    expect(second.headers.get('idempotent-replayed')).toBeNull();
    expect((JSON.parse(second.text) as Created).id).not.toBe((JSON.parse(first.text) as Created).id);
    expect(await subscriptionsOf((JSON.parse(first.text) as Created).url)).toBe(2);
  });
});
