import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { sqlOn } from '../support/demo.js';
import { runCislo } from '../support/demo-operations.js';
import { envelope, postSigned, type SignOptions, signedCall } from '../support/web-api.js';

/**
 * CONTRACT 5a on the Web API, through the local stack as a client calls it, on the embedded
 * database (npm test) and on the T-SQL engine (npm run test:tsql): a call under an
 * `Idempotency-Key` runs once, its answer recorded with its effects, and every retry gets that
 * answer byte for byte.
 */
let stack: LocalStack;

beforeAll(async () => {
  stack = await startLocalStack({ port: 0, env: { COMMAND_TIMEOUT_ASYNC: '1' } });
});
afterAll(async () => {
  await stack?.stop();
});

let keys = 0;
/** A key of this run's own (the suites may run again on the same database). */
const newKey = (label: string) => `${label}-${process.pid}-${Date.now().toString(36)}-${++keys}`;

const post = (path: 'getData' | 'getDataAsync', body: string, key?: string, options: SignOptions = {}) =>
  postSigned(stack.url, path, body, {
    ...options,
    headers: { ...options.headers, ...(key === undefined ? {} : { 'idempotency-key': key }) },
  });

const createDocument = (cislo: string, castka = 1250.5) => envelope(2001, [{ cislo, subject_id: 1, castka }]);

const sql = () => sqlOn(stack.database);
const documents = async (cislo: string) =>
  Number((await sql()`SELECT COUNT(*) AS n FROM dbo."DOKUMENT" WHERE "CISLO" = ${cislo}`)[0]!.n);
const journalRows = async (requestIdLike: number) =>
  Number((await sql()`SELECT COUNT(*) AS n FROM dbo."WS_JOURNAL" WHERE "ID" >= ${requestIdLike}`)[0]!.n);

const errorOf = (text: string) =>
  (JSON.parse(text) as { data: { error: { errorCode: string; errorMessage: string }[] }[] }).data[0]!
    .error[0]!;

describe('Exactly once on the Web API (CONTRACT 5a)', () => {
  it('runs a write once: a re-signed retry gets the recorded answer byte for byte, replayed, and journals nothing', async () => {
    const cislo = runCislo('once');
    const key = newKey('once');
    const first = await post('getData', createDocument(cislo), key);
    expect(first.status, first.text).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const answer = JSON.parse(first.text) as { id: number; vlResult: number; data: { id: number }[] };
    expect(answer).toEqual({ id: expect.any(Number), vlResult: 1, data: [{ id: expect.any(Number) }] });

    for (let retry = 0; retry < 3; retry++) {
      const again = await post('getData', createDocument(cislo), key);
      expect(again.status).toBe(200);
      expect(again.text).toBe(first.text);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
    }
    expect(await documents(cislo)).toBe(1);
    // The replays wrote no journal row: the call's own is the last.
    expect(await journalRows(answer.id)).toBe(1);
    const [row] =
      await sql()`SELECT "STATE" AS state, "ANSWER" AS answer FROM dbo."WS_JOURNAL" WHERE "ID" = ${answer.id}`;
    expect(row).toMatchObject({ state: 'finished' });
    expect(JSON.parse(String(row!.answer))).toEqual(answer);
  });

  it('answers the identical signed bytes within ReplayRequestTime with the record, not 409/105', async () => {
    const cislo = runCislo('bytes');
    const key = newKey('bytes');
    const signed = signedCall(createDocument(cislo), { headers: { 'idempotency-key': key } });
    const send = () =>
      fetch(`${stack.url}/demo/WebAPI/getData`, {
        method: 'POST',
        headers: signed.headers,
        body: signed.body,
      });
    const first = await send();
    const firstText = await first.text();
    expect(first.status, firstText).toBe(200);
    const again = await send();
    expect(again.status).toBe(200);
    expect(await again.text()).toBe(firstText);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    // Without the key the same bytes are a replay, as before.
    const unkeyed = signedCall(createDocument(runCislo('plain')));
    const plain = () =>
      fetch(`${stack.url}/demo/WebAPI/getData`, {
        method: 'POST',
        headers: unkeyed.headers,
        body: unkeyed.body,
      });
    expect((await plain()).status).toBe(200);
    const replay = await plain();
    expect(replay.status).toBe(409);
    expect(errorOf(await replay.text()).errorCode).toBe('105');
    expect(await documents(cislo)).toBe(1);
  });

  it('refuses the same key with another request 422/107 and runs nothing; another route is another request', async () => {
    const cislo = runCislo('reuse');
    const key = newKey('reuse');
    expect((await post('getData', createDocument(cislo), key)).status).toBe(200);
    const other = await post('getData', createDocument(cislo, 99), key);
    expect(other.status).toBe(422);
    expect(errorOf(other.text)).toMatchObject({ errorCode: '107' });
    expect(other.headers.get('idempotent-replayed')).toBeNull();
    const otherRoute = await post('getDataAsync', createDocument(cislo), key);
    expect(otherRoute.status).toBe(422);
    expect(await documents(cislo)).toBe(1);
  });

  it("keeps keys apart per application: another application's equal key is another key", async () => {
    const cislo = runCislo('apps');
    const key = newKey('apps');
    const mine = await post('getData', createDocument(cislo), key);
    const theirs = await post('getData', createDocument(cislo), key, {
      apiKey: 'other-api-key',
      apiHash: 'other-api-hash',
    });
    expect([mine.status, theirs.status]).toEqual([200, 200]);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect(JSON.parse(theirs.text).id).not.toBe(JSON.parse(mine.text).id);
    expect(await documents(cislo)).toBe(2);
  });

  it('makes one row of 50 concurrent calls under one key: each answer is the record or 409/108 with Retry-After', async () => {
    const cislo = runCislo('flood');
    const key = newKey('flood');
    // As clients do: a call the tenant's fair share refuses (429/130, before anything runs and
    // recording nothing) is sent again, re-signed, after its Retry-After.
    const admitted = async () => {
      for (;;) {
        const answer = await post('getData', createDocument(cislo), key);
        if (answer.status !== 429) return answer;
        expect(errorOf(answer.text).errorCode).toBe('130');
        await new Promise((resolve) =>
          setTimeout(resolve, 1000 * Number(answer.headers.get('retry-after') ?? 1)),
        );
      }
    };
    const answers = await Promise.all(Array.from({ length: 50 }, admitted));
    const ok = answers.filter((a) => a.status === 200);
    const busy = answers.filter((a) => a.status === 409);
    expect(ok.length + busy.length, answers.map((a) => `${a.status} ${a.text}`).join('\n')).toBe(50);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(new Set(ok.map((a) => a.text)).size).toBe(1);
    expect(ok.filter((a) => a.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    for (const refusal of busy) {
      expect(errorOf(refusal.text).errorCode).toBe('108');
      expect(Number(refusal.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
    expect(await documents(cislo)).toBe(1);
    // A retry after the flood gets the record.
    const later = await post('getData', createDocument(cislo), key);
    expect(later.text).toBe(ok[0]!.text);
  });

  it('answers 409/108 while the first call under the key still runs, then its answer', async () => {
    const key = newKey('running');
    const body = envelope(9001, [{ seconds: 2 }]);
    const first = post('getData', body, key);
    await sleep(600);
    const meanwhile = await post('getData', body, key);
    expect(meanwhile.status).toBe(409);
    expect(errorOf(meanwhile.text).errorCode).toBe('108');
    expect(meanwhile.headers.get('retry-after')).toBe('1');
    const answer = await first;
    expect(answer.status).toBe(200);
    const after = await post('getData', body, key);
    expect(after.text).toBe(answer.text);
    expect(after.headers.get('idempotent-replayed')).toBe('true');
  });

  it("replays an operation's own failure (120) as it was; a procedure that ends the transaction is 120, recorded nowhere", async () => {
    const key = newKey('fails');
    const failed = await post('getData', envelope(9002), key);
    expect(failed.status).toBe(200);
    expect(errorOf(failed.text).errorCode).toBe('120');
    const again = await post('getData', envelope(9002), key);
    expect(again.text).toBe(failed.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');

    const cislo = runCislo('ends');
    const endKey = newKey('ends');
    const ends = await post('getData', envelope(2002, [{ cislo, subject_id: 1, castka: 1 }]), endKey);
    expect(ends.status).toBe(200);
    const error = errorOf(ends.text);
    expect(error.errorCode).toBe('120');
    expect(error.errorMessage).toMatch(/ended the service's transaction itself/);
    const [journal] =
      await sql()`SELECT "STATE" AS state FROM dbo."WS_JOURNAL" WHERE "ID" = ${JSON.parse(ends.text).id}`;
    expect(journal).toMatchObject({ state: 'failed' });
    // Nothing was recorded: the retry runs (and ends the same way); nothing of it is kept.
    const retry = await post('getData', envelope(2002, [{ cislo, subject_id: 1, castka: 1 }]), endKey);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(JSON.parse(retry.text).id).toBeGreaterThan(JSON.parse(ends.text).id);
    expect(await documents(cislo)).toBe(0);
  });

  it('answers an async retry with the same job: -2/160 while it runs, its final answer once ended; one job', async () => {
    const key = newKey('async');
    const body = envelope(9001, [{ seconds: 2.5 }]);
    const first = await post('getDataAsync', body, key);
    expect(first.status).toBe(200);
    const pending = JSON.parse(first.text) as { id: number; vlResult: number };
    expect(pending.vlResult).toBe(-2);
    const retry = await post('getDataAsync', body, key);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(JSON.parse(retry.text)).toMatchObject({ id: pending.id, vlResult: -2 });
    let final: { status: number; headers: Headers; text: string } | undefined;
    for (let i = 0; i < 20 && JSON.parse(final?.text ?? '{"vlResult":-2}').vlResult === -2; i++) {
      await sleep(500);
      final = await post('getDataAsync', body, key);
    }
    expect(JSON.parse(final!.text)).toEqual({ id: pending.id, vlResult: 1, data: [{ slept: 2.5 }] });
    expect(final!.headers.get('idempotent-replayed')).toBe('true');
    // One journal row (the job's): no retry journaled or queued anything.
    expect(await journalRows(pending.id)).toBe(1);
  });

  it('refuses an empty or malformed key 400/100 and records nothing; a quoted key is the same key bare', async () => {
    for (const bad of ['', '"unclosed', 'spaces are not visible', 'é', 'x'.repeat(256)]) {
      const refused = await post('getData', createDocument(runCislo('bad')), bad);
      expect(refused.status, bad).toBe(400);
      expect(errorOf(refused.text).errorCode).toBe('100');
      expect(errorOf(refused.text).errorMessage).toMatch(/Idempotency-Key/);
    }
    const cislo = runCislo('quoted');
    const key = newKey('quoted');
    const bare = await post('getData', createDocument(cislo), key);
    const quoted = await post('getData', createDocument(cislo), `"${key}"`);
    expect(quoted.text).toBe(bare.text);
    expect(quoted.headers.get('idempotent-replayed')).toBe('true');
    expect(await documents(cislo)).toBe(1);
  });

  it('without the header, every call runs: a retry may write twice (the docs say so)', async () => {
    const cislo = runCislo('twice');
    expect((await post('getData', createDocument(cislo))).status).toBe(200);
    expect((await post('getData', createDocument(cislo))).status).toBe(200);
    expect(await documents(cislo)).toBe(2);
  });
});
