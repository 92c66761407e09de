import { XMLParser } from 'fast-xml-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LARGE_ANSWER_BUCKET, type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { sqlOn } from '../support/demo.js';
import { envelope, postSigned, type SignOptions, signedCall } from '../support/web-api.js';

// Every subject (60 rows, about 5 KB as JSON, 7 KB as XML) is over this; one subject is well under.
const INLINE_LIMIT_BYTES = 2048;

let stack: LocalStack;

beforeAll(async () => {
  stack = await startLocalStack({ port: 0, env: { INLINE_LIMIT_BYTES: String(INLINE_LIMIT_BYTES) } });
});
afterAll(async () => {
  await stack?.stop();
});

const post = (path: 'getData' | 'getDataAsync', body: string, options: SignOptions = {}) =>
  postSigned(stack.url, path, body, options);

/** GETs the presigned URL of a 303: what it serves, and the key it names in the local bucket. */
async function download(location: string | null) {
  expect(location).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/.*X-Amz-Expires=900/);
  const response = await fetch(location!);
  expect(response.status).toBe(200);
  return {
    key: decodeURIComponent(new URL(location!).pathname.slice(`/${LARGE_ANSWER_BUCKET}/`.length)),
    type: response.headers.get('content-type'),
    text: await response.text(),
  };
}

async function journalRow(id: number) {
  const rows = await sqlOn(stack.database)`
    SELECT "STATE", "VL_RESULT", "CALL_MODE", "ANSWER" FROM dbo."WS_JOURNAL" WHERE "ID" = ${id}`;
  return rows[0] as { STATE: string; VL_RESULT: number; CALL_MODE: string; ANSWER: string };
}

interface Answer {
  id: number;
  vlResult: number;
  data: Record<string, unknown>[];
}

const xmlParser = new XMLParser({ parseTagValue: false, isArray: (name) => name.startsWith('row') });

describe(`Web API answers over the inline limit (local stack, INLINE_LIMIT_BYTES=${INLINE_LIMIT_BYTES})`, () => {
  let jsonAnswer: Answer;

  it('getData in JSON: 303 to a presigned URL serving the whole answer as JSON; the journal row is answered', async () => {
    const response = await post('getData', envelope(1001));
    expect(response.status).toBe(303);
    expect(response.text).toBe('');
    expect(response.headers.get('x-request-id')).toBeTruthy();
    expect(response.headers.get('cache-control')).toBe('no-store');
    const stored = await download(response.headers.get('location'));
    expect(stored.key).toMatch(/^answers\/demo\/web-api\/\d{4}-\d\d-\d\d\/[0-9a-f-]{36}\.json$/);
    expect(stored.type).toBe('application/json; charset=utf-8');
    expect(Buffer.byteLength(stored.text)).toBeGreaterThan(INLINE_LIMIT_BYTES);
    jsonAnswer = JSON.parse(stored.text) as Answer;
    expect(jsonAnswer).toMatchObject({ id: expect.any(Number), vlResult: 1 });
    expect(jsonAnswer.data).toHaveLength(60);
    expect(jsonAnswer.data[0]).toEqual({
      id: 1,
      nazev: 'Alfa Trade s.r.o.',
      ico: '25596641',
      mesto: 'Praha',
    });
    expect(await journalRow(jsonAnswer.id)).toEqual({
      STATE: 'finished',
      VL_RESULT: 1,
      CALL_MODE: 'sync',
      ANSWER: stored.text,
    });
  });

  it('a retry under an Idempotency-Key of a large answer: 303 again, a new presigned URL of the same object, replayed', async () => {
    const key = `large-${process.pid}-${Date.now()}`;
    const headers = { 'idempotency-key': key };
    const first = await post('getData', envelope(1001), { headers });
    expect(first.status).toBe(303);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const stored = await download(first.headers.get('location'));
    // A second later: the presigned URL of the retry is signed anew.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const retry = await post('getData', envelope(1001), { headers });
    expect(retry.status).toBe(303);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.headers.get('cache-control')).toBe('no-store');
    expect(retry.headers.get('location')).not.toBe(first.headers.get('location'));
    const again = await download(retry.headers.get('location'));
    expect(again).toEqual(stored);
    // One journal row: the first call's, named by the answer both URLs serve.
    const { id } = JSON.parse(again.text) as Answer;
    const later = await sqlOn(stack.database)`SELECT COUNT(*) AS n FROM dbo."WS_JOURNAL" WHERE "ID" > ${id}`;
    expect(Number(later[0]!.n)).toBe(0);
  });

  it('getData in XML: 303 to the answer as XML, under the content type the call negotiated', async () => {
    const response = await post('getData', '<data><vlTyp>1001</vlTyp></data>');
    expect(response.status).toBe(303);
    const stored = await download(response.headers.get('location'));
    expect(stored.key).toMatch(/^answers\/demo\/web-api\/.*\.xml$/);
    expect(stored.type).toBe('application/xml; charset=utf-8');
    const { result } = xmlParser.parse(stored.text);
    expect(result.vlResult).toBe('1');
    expect(result.data.rowSubject).toHaveLength(60);
    expect(result.data.rowSubject[0]).toEqual({
      id: '1',
      nazev: 'Alfa Trade s.r.o.',
      ico: '25596641',
      mesto: 'Praha',
    });
    expect((await journalRow(Number(result.id))).STATE).toBe('finished');
  });

  it('997 for a large answer: 303 to the whole original answer, in JSON and XML, on getData and getDataAsync', async () => {
    const json = await post('getData', envelope(997, [{ idws_journal: jsonAnswer.id }]));
    expect(json.status).toBe(303);
    const again = JSON.parse((await download(json.headers.get('location'))).text) as Answer;
    expect(again).toEqual({
      id: expect.any(Number),
      vlResult: 1,
      data: [{ resultForId: jsonAnswer, id: jsonAnswer.id }],
    });
    expect((await journalRow(again.id)).STATE).toBe('finished');

    const xml = await post(
      'getDataAsync',
      `<data><vlTyp>997</vlTyp><params><idwsJournal>${jsonAnswer.id}</idwsJournal></params></data>`,
    );
    expect(xml.status).toBe(303);
    const stored = await download(xml.headers.get('location'));
    expect(stored.type).toBe('application/xml; charset=utf-8');
    const { result } = xmlParser.parse(stored.text);
    expect(result.data.id).toBe(String(jsonAnswer.id));
    expect(result.data.resultForId.id).toBe(String(jsonAnswer.id));
    expect(result.data.resultForId.data.rowSubject).toHaveLength(60);
  });

  it('getDataAsync: an answer that arrives in time goes the same way; the job row is answered', async () => {
    const response = await post('getDataAsync', envelope(1001), { accept: 'application/json' });
    expect(response.status).toBe(303);
    const stored = await download(response.headers.get('location'));
    expect(stored.type).toBe('application/json; charset=utf-8');
    const answer = JSON.parse(stored.text) as Answer;
    expect(answer.data).toEqual(jsonAnswer.data);
    expect(await journalRow(answer.id)).toEqual({
      STATE: 'finished',
      VL_RESULT: 1,
      CALL_MODE: 'async',
      ANSWER: stored.text,
    });
  });

  it('a client that follows redirects gets the answer itself; a small answer stays inline', async () => {
    const signed = signedCall(envelope(1001));
    const followed = await fetch(`${stack.url}/demo/WebAPI/getData`, {
      method: 'POST',
      headers: signed.headers,
      body: signed.body,
    });
    // 303: the client GETs the Location, without the call's body or signature.
    expect(followed.status).toBe(200);
    expect(((await followed.json()) as Answer).data).toHaveLength(60);

    const small = await post('getData', envelope(1001, [{ ico: '25596641' }]));
    expect(small.status).toBe(200);
    expect(small.headers.get('location')).toBeNull();
    expect((JSON.parse(small.text) as Answer).data).toHaveLength(1);
  });
});
