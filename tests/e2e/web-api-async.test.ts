import { setTimeout as sleep } from 'node:timers/promises';
import { XMLParser } from 'fast-xml-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { sqlOn } from '../support/demo.js';
import { envelope, postSigned, type SignOptions, signedCall } from '../support/web-api.js';

let stack: LocalStack;

beforeAll(async () => {
  // The scenario: a 2 s limit against a 5 s operation, on getDataAsync and on getData.
  stack = await startLocalStack({
    port: 0,
    env: { COMMAND_TIMEOUT_ASYNC: '2', WEB_API_SYNC_TIME_LIMIT: '2' },
  });
});
afterAll(async () => {
  await stack?.stop();
});

const post = (path: 'getData' | 'getDataAsync', body: string, options: SignOptions = {}) =>
  postSigned(stack.url, path, body, options);

const result997 = (journalId: number) => envelope(997, [{ idws_journal: journalId }]);
const xmlParser = new XMLParser({ parseTagValue: false, isArray: (name) => name.startsWith('row') });

describe('Web API time limits over HTTP (local stack, COMMAND_TIMEOUT_ASYNC=2, WEB_API_SYNC_TIME_LIMIT=2)', () => {
  it('9001 for 5 s: -2/160 after 2 s, "still running" at once, the full answer once it ends', async () => {
    const started = Date.now();
    const first = await post('getDataAsync', envelope(9001, [{ seconds: 5 }]));
    const waited = Date.now() - started;
    expect(first.status).toBe(200);
    const timeout = JSON.parse(first.text);
    const j = timeout.id as number;
    expect(timeout).toEqual({
      id: expect.any(Number),
      vlResult: -2,
      data: [
        {
          error: [
            {
              errorCode: '160',
              errorMessage: `The requested operation (vltyp 9001, journal ${j}) did not finish within the time limit`,
            },
          ],
        },
      ],
    });
    expect(waited).toBeGreaterThanOrEqual(1900);
    // Answered at the 2 s limit, well before the 5 s operation could have ended.
    expect(waited).toBeLessThan(4500);

    const running = await post('getData', result997(j));
    expect(running.status).toBe(200);
    const still = JSON.parse(running.text);
    expect(still).toEqual({
      id: expect.any(Number),
      vlResult: 1,
      data: [{ resultForId: [{ errorCode: 160, errorMessage: expect.any(String) }], idws_journal: j }],
    });
    expect(still.id).not.toBe(j);

    // The job finishes about 5 s after the call; on a busy machine a little later.
    let finished = await post('getData', result997(j));
    while (JSON.parse(finished.text).data[0].idws_journal === j && Date.now() - started < 20_000) {
      await sleep(250);
      finished = await post('getData', result997(j));
    }
    expect(Date.now() - started).toBeGreaterThanOrEqual(5000);
    expect(JSON.parse(finished.text)).toEqual({
      id: expect.any(Number),
      vlResult: 1,
      data: [{ resultForId: { id: j, vlResult: 1, data: [{ slept: 5 }] }, id: j }],
    });
    // The same in XML, on getDataAsync.
    const xml = await post(
      'getDataAsync',
      `<data><vlTyp>997</vlTyp><params><idwsJournal>${j}</idwsJournal></params></data>`,
    );
    const { result } = xmlParser.parse(xml.text);
    expect(result.data).toEqual({
      resultForId: { id: String(j), vlResult: '1', data: { rowSleep: [{ slept: '5' }] } },
      id: String(j),
    });
    // Every call is journaled, 997 included.
    const rows = await sqlOn(stack.database)`SELECT "VLTYP", "CALL_MODE", "STATE" FROM dbo."WS_JOURNAL"
      WHERE "ID" >= ${j} ORDER BY "ID"`;
    // The 9001 call, the 997 calls on getData (two or more: "still running", then until finished),
    // and the one on getDataAsync.
    expect(rows.length).toBeGreaterThanOrEqual(4);
    expect(rows).toEqual([
      { VLTYP: 9001, CALL_MODE: 'async', STATE: 'finished' },
      ...rows.slice(1, -1).map(() => ({ VLTYP: 997, CALL_MODE: 'sync', STATE: 'finished' })),
      { VLTYP: 997, CALL_MODE: 'async', STATE: 'finished' },
    ]);
  }, 40_000);

  it('getData of 9001 for 5 s: cancelled after 2 s with 200, -1/161 and its journal id; 997 the same', async () => {
    const started = Date.now();
    const first = await post('getData', envelope(9001, [{ seconds: 5 }]));
    const waited = Date.now() - started;
    expect(first.status).toBe(200);
    const answer = JSON.parse(first.text);
    const j = answer.id as number;
    expect(answer).toEqual({
      id: expect.any(Number),
      vlResult: -1,
      data: [
        {
          error: [
            {
              errorCode: '161',
              errorMessage: `The operation (vltyp 9001, journal ${j}) did not finish within the synchronous time limit of 2 s and was cancelled; use getDataAsync`,
            },
          ],
        },
      ],
    });
    expect(waited).toBeGreaterThanOrEqual(1900);
    // Well before the operation's own 5 s (a loaded CI machine took 4.05 s).
    expect(waited).toBeLessThan(4800);
    const rows = await sqlOn(
      stack.database,
    )`SELECT "STATE", "CALL_MODE" FROM dbo."WS_JOURNAL" WHERE "ID" = ${j}`;
    expect(rows).toEqual([{ STATE: 'failed', CALL_MODE: 'sync' }]);
    const later = JSON.parse((await post('getData', result997(j))).text);
    expect(later.data).toEqual([{ resultForId: answer, id: j }]);
    // A late finish cannot overwrite the answer: the row stays failed after its 5 s would have passed.
    await sleep(Math.max(0, started + 5500 - Date.now()));
    const after = await sqlOn(
      stack.database,
    )`SELECT "STATE", "ANSWER" FROM dbo."WS_JOURNAL" WHERE "ID" = ${j}`;
    expect([after[0]!.STATE, JSON.parse(after[0]!.ANSWER as string)]).toEqual(['failed', answer]);
  }, 15_000);

  it('answers a fast operation on getDataAsync with its normal answer, in JSON and XML', async () => {
    // Asserted on the second call: the first here took 1.8 and 2.2 s of the 2 s limit in two CI
    // runs on a loaded machine (T-SQL engine, packaged zips), 0.4–0.8 s in ten others.
    await post('getDataAsync', envelope(1001, [{ ico: '25596641' }]));
    const json = await post('getDataAsync', envelope(1001, [{ ico: '25596641' }]));
    expect(JSON.parse(json.text)).toEqual({
      id: expect.any(Number),
      vlResult: 1,
      data: [{ id: 1, nazev: 'Alfa Trade s.r.o.', ico: '25596641', mesto: 'Praha' }],
    });
    const xml = await post(
      'getDataAsync',
      '<data><vlTyp>7</vlTyp><params><kodUctu>0</kodUctu></params></data>',
    );
    expect(
      xmlParser.parse(xml.text).result.data.rowUcet.map((row: { kodUctu: string }) => row.kodUctu),
    ).toEqual(['013000', '022000', '042000', '073000', '082000']);
  });

  it('answers an operation that fails in the worker with -1/120, and 997 returns that error answer', async () => {
    const failed = JSON.parse((await post('getDataAsync', envelope(9002))).text);
    expect(failed).toMatchObject({ id: expect.any(Number), vlResult: -1 });
    expect(failed.data[0].error[0].errorCode).toBe('120');
    const later = JSON.parse((await post('getData', result997(failed.id))).text);
    expect(later.data).toEqual([{ resultForId: failed, id: failed.id }]);
  });

  it("answers 997 for another application's journal id, or an unknown one, with 404/111", async () => {
    const own = JSON.parse((await post('getDataAsync', envelope(7, [{ kod_uctu: '5' }]))).text);
    for (const [body, options] of [
      [result997(own.id), { apiKey: 'other-api-key', apiHash: 'other-api-hash' }],
      [result997(987654), {}],
    ] as const) {
      for (const path of ['getData', 'getDataAsync'] as const) {
        const { status, text } = await post(path, body, options);
        expect(status).toBe(404);
        expect(JSON.parse(text).data[0].error[0]).toEqual({
          errorCode: '111',
          errorMessage: expect.stringMatching(/does not exist for this application/),
        });
      }
    }
  });

  it('answers 997 without idws_journal with 400/100', async () => {
    const { status, text } = await post('getData', envelope(997, [{ id: 1 }]));
    expect(status).toBe(400);
    expect(JSON.parse(text).data[0].error[0].errorCode).toBe('100');
  });

  it('refuses a replayed getDataAsync with 409/105 and queues nothing more', async () => {
    const signed = signedCall(envelope(7, [{ kod_uctu: '6' }]));
    const send = () =>
      fetch(`${stack.url}/demo/WebAPI/getDataAsync`, {
        method: 'POST',
        headers: signed.headers,
        body: signed.body,
      });
    expect((await send()).status).toBe(200);
    const replay = await send();
    expect(replay.status).toBe(409);
    expect(JSON.parse(await replay.text()).data[0].error[0].errorCode).toBe('105');
  });
});
