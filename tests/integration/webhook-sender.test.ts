import type { LookupAddress } from 'node:dns';
import { request } from 'node:http';
import type { LookupFunction } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AddressResolver } from '../../shared/adapters/http/guarded-lookup.js';
import {
  createHttpWebhookSender,
  type HttpWebhookSender,
} from '../../shared/adapters/http/webhook-sender.js';
import { webhookRequest } from '../../shared/core/webhook/deliver.js';
import { signWebhook } from '../../shared/core/webhook/signature.js';
import { FORBIDDEN_ADDRESSES } from '../../shared/core/webhook/target.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

// Only loopback traffic is allowed here: forbidden targets are tested with IP literals and stub
// resolvers, and must be refused before any connection is made.

let receiver: WebhookReceiver;
const senders: HttpWebhookSender[] = [];

/** A resolver that answers from a table and counts the questions. */
function stubResolver(table: Record<string, string[]>): AddressResolver & { calls: string[] } {
  const calls: string[] = [];
  const resolve = async (hostname: string): Promise<LookupAddress[]> => {
    calls.push(hostname);
    const addresses = table[hostname];
    if (!addresses)
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(resolve, { calls });
}

function sender(allowPrivateTargets: boolean, resolve?: AddressResolver, timeoutMs = 10_000) {
  const created = createHttpWebhookSender({ allowPrivateTargets, timeoutMs, resolve });
  senders.push(created);
  return created;
}

const post = (url: string, secret: string | null = 'demo-webhook-secret') =>
  webhookRequest(new URL(url), 'msg_test', 123456, secret, 1700000000);

beforeAll(async () => {
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  for (const created of senders) created.close();
  await receiver?.close();
});

describe('Class: HttpWebhookSender', () => {
  it('POSTs the bare id with the secret, content type and a verifiable signature', async () => {
    const result = await sender(true).send(post(`${receiver.url}/ok`));
    expect(result).toMatchObject({ kind: 'response', status: 200 });
    const [got] = receiver.receivedOn('/ok');
    expect(got!.method).toBe('POST');
    expect(got!.body).toBe('123456');
    expect(got!.headers['content-type']).toBe('application/json');
    expect(got!.headers['content-length']).toBe('6');
    expect(got!.headers['x-peppol-webhook-secret']).toBe('demo-webhook-secret');
    expect(got!.headers['webhook-id']).toBe('msg_test');
    expect(got!.headers['webhook-timestamp']).toBe('1700000000');
    expect(got!.headers['webhook-signature']).toBe(
      signWebhook('demo-webhook-secret', 'msg_test', 1700000000, got!.body),
    );
  });

  it('reports the status and Retry-After of a failed answer', async () => {
    receiver.on('/busy', { status: 503, headers: { 'retry-after': '120' } });
    expect(await sender(true).send(post(`${receiver.url}/busy`))).toMatchObject({
      kind: 'response',
      status: 503,
      retryAfter: '120',
    });
  });

  it('does not follow redirects', async () => {
    receiver.on('/moved', { status: 302, headers: { location: '/elsewhere' } });
    const result = await sender(true).send(post(`${receiver.url}/moved`));
    expect(result).toMatchObject({ kind: 'response', status: 302 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(receiver.receivedOn('/elsewhere')).toHaveLength(0);
  });

  it('gives up when no answer comes within the time-out', async () => {
    receiver.on('/slow', { status: 200, delayMs: 2000 });
    const result = await sender(true, undefined, 300).send(post(`${receiver.url}/slow`));
    expect(result.kind).toBe('error');
    expect(result.kind === 'error' && result.error).toContain('no answer within 300 ms');
    expect(result.durationMs).toBeGreaterThanOrEqual(290);
    expect(result.durationMs).toBeLessThan(1500);
  });

  it('reports a connection failure as an error', async () => {
    const closed = await startWebhookReceiver();
    const url = `${closed.url}/gone`;
    await closed.close();
    const result = await sender(true).send(post(url));
    expect(result.kind).toBe('error');
    expect(result.kind === 'error' && result.error).toContain('ECONNREFUSED');
  });

  it.each([
    'http://10.0.0.1/hook',
    'http://169.254.169.254/latest/meta-data/',
    'http://100.64.0.1/',
    'http://[fd00:ec2::254]/',
    'http://[::ffff:10.0.0.1]/',
    'http://[64:ff9b::a9fe:a9fe]/',
  ])('refuses the IP literal %s without resolving or connecting', async (url) => {
    const resolve = stubResolver({});
    const result = await sender(false, resolve).send(post(url));
    expect(result).toMatchObject({ kind: 'refused', durationMs: 0 });
    expect(resolve.calls).toEqual([]);
  });

  it('refuses the loopback receiver itself when private targets are not allowed', async () => {
    const before = receiver.connections();
    for (const host of ['127.0.0.1', '[::1]', '[::ffff:127.0.0.1]', '2130706433']) {
      const result = await sender(false).send(post(`http://${host}:${receiver.port}/private`));
      expect(result.kind, host).toBe('refused');
    }
    expect(receiver.receivedOn('/private')).toHaveLength(0);
    expect(receiver.connections()).toBe(before);
  });

  it.each([
    [['127.0.0.1'], 'loopback'],
    [['10.0.0.5'], 'private'],
    [['169.254.169.254'], 'link-local'],
    [['fd00::1'], 'private'],
    [['::ffff:192.168.0.1'], 'private'],
    // One bad address is enough: the name is not used at all.
    [['93.184.215.14', '10.0.0.1'], 'private'],
  ])('refuses a name resolving to %j (%s) before connecting', async (addresses, label) => {
    const before = receiver.connections();
    const resolve = stubResolver({ 'hook.example': addresses });
    const result = await sender(false, resolve).send(post(`http://hook.example:${receiver.port}/named`));
    expect(result.kind).toBe('refused');
    expect(result.kind === 'refused' && result.reason).toContain(label);
    expect(receiver.connections()).toBe(before);
    expect(receiver.receivedOn('/named')).toHaveLength(0);
  });

  it('connects to exactly the address it checked: one resolution per connection, no second look-up', async () => {
    // A rebinding name would answer differently on a second look-up; there is none to exploit.
    const resolve = stubResolver({ 'rebind.example': ['127.0.0.1'] });
    const refused = await sender(false, resolve).send(post(`http://rebind.example:${receiver.port}/rebind`));
    expect(refused.kind).toBe('refused');
    expect(resolve.calls).toEqual(['rebind.example']);

    // Allowed (as on the local stack), the same name reaches the receiver through the checked address.
    const allowed = stubResolver({ 'rebind.example': ['127.0.0.1'] });
    const result = await sender(true, allowed).send(post(`http://rebind.example:${receiver.port}/rebind`));
    expect(result).toMatchObject({ kind: 'response', status: 200 });
    expect(allowed.calls).toEqual(['rebind.example']);
    expect(receiver.receivedOn('/rebind')[0]!.headers.host).toBe(`rebind.example:${receiver.port}`);
  });

  it('reports a name that does not resolve as an error (retried), not a refusal', async () => {
    const result = await sender(false, stubResolver({})).send(post('http://nowhere.example/hook'));
    expect(result.kind).toBe('error');
    expect(result.kind === 'error' && result.error).toContain('ENOTFOUND');
  });

  it('has a second line: Node itself refuses a forbidden address that a look-up hands it', async () => {
    // What the sender passes as `blockList`, behind a look-up that checks nothing (loopback only).
    const before = receiver.connections();
    const naiveLookup: LookupFunction = (_host, options, callback) =>
      setImmediate(() =>
        options.all ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4),
      );
    const error = await new Promise<NodeJS.ErrnoException>((resolve) => {
      const outgoing = request(`http://naive.example:${receiver.port}/blocked`, {
        method: 'POST',
        lookup: naiveLookup,
        ...{ blockList: FORBIDDEN_ADDRESSES },
      });
      outgoing.on('error', resolve);
      outgoing.end();
    });
    expect(error.code).toBe('ERR_IP_BLOCKED');
    expect(receiver.connections()).toBe(before);
  });

  it('refuses schemes other than http(s)', async () => {
    expect((await sender(true).send(post('ftp://127.0.0.1/x'))).kind).toBe('refused');
  });

  it('reports a secret that no HTTP header can carry as a failed attempt, not an exception', async () => {
    for (const secret of ['tajné-heslo-č', 'line\nbreak']) {
      const result = await sender(true).send(post(`${receiver.url}/bad-secret`, secret));
      expect(result).toMatchObject({
        kind: 'error',
        error: expect.stringMatching(/x-peppol-webhook-secret/),
      });
      expect(JSON.stringify(result)).not.toContain(secret.slice(0, 5));
    }
    expect(receiver.receivedOn('/bad-secret')).toEqual([]);
  });
});
