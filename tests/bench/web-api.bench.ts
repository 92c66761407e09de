import { startLocalStack } from '../../infra/local/stack.js';
import { createEmbeddedWebApiStore } from '../../shared/adapters/embedded-sql/web-api-store.js';
import { getData, type WebApiContext } from '../../shared/core/web-api/calls.js';
import { validateEnvelope } from '../../shared/core/web-api/envelope.js';
import { signatureHeader, verifySignature } from '../../shared/core/web-api/signature.js';
import { median, report, sample } from './measure.js';

const HASH = 'demo-api-hash';
const PROCEDURE = 'SELECT * FROM "dbo"."WS_OP_UCET_SEARCH"($1::jsonb)';

/**
 * Operation 7 (three accounts) four ways: the bare procedure call on the embedded database (the
 * baseline), the getData use case in-process (key lookup, signature check, replay guard, operation
 * lookup, journal write around the same call), getData over HTTP on the local stack, and
 * getDataAsync over HTTP (against getData over HTTP).
 */
export default async function webApiBench(): Promise<void> {
  const stack = await startLocalStack({ port: 0, database: 'embedded' });
  try {
    const runs = 200;
    const db = stack.database;
    const store = createEmbeddedWebApiStore(db);
    let n = 0;
    // Every call differs (an extra parameter the procedure ignores), so none is a replay.
    const nextBody = () => Buffer.from(JSON.stringify({ vltyp: 7, params: [{ kod_uctu: '21', n: n++ }] }));

    const bare = await sample(async () => {
      const rows = await db.query(PROCEDURE, [JSON.stringify([{ kod_uctu: '21', n: n++ }])]);
      if (rows.length !== 3) throw new Error('unexpected rows');
    }, runs);

    const ctx: WebApiContext = {
      store,
      tenant: 'demo',
      policy: {
        requestMaxSecValidity: 300,
        checkReplayRequest: true,
        replayRequestTime: 300,
        commandTimeoutAsyncSeconds: 20,
        jobStaleSeconds: 1800,
      },
      requestId: 'bench',
    };
    const useCase = await sample(async () => {
      const body = nextBody();
      const result = await getData(ctx, {
        apiKey: 'demo-api-key',
        signature: signatureHeader(HASH, body),
        body,
        decode: () => validateEnvelope(JSON.parse(body.toString('utf8'))),
      });
      if (result.answer.data.length !== 3) throw new Error('unexpected rows');
    }, runs);
    report(
      'getData use case in-process (signature, replay guard, journal)',
      useCase,
      'bare procedure call',
      bare,
    );

    // The parts on their own.
    const body = nextBody();
    const header = signatureHeader(HASH, body);
    const now = Math.floor(Date.now() / 1000);
    const signature = await sample(async () => verifySignature(header, HASH, body, now, 300), runs * 10);
    const journal = await sample(async () => {
      const id = await store.openJournal({
        applicationId: 1,
        vltyp: 7,
        mode: 'sync',
        request: body.toString(),
        requestId: 'bench',
      });
      await store.finishJournal(id, { state: 'finished', answer: '{}', vlResult: 1, rowName: 'Ucet' });
    }, runs);
    const replay = await sample(async () => store.claimRequest(1, `${n++}`.padStart(64, '0'), 300), runs);
    const lookups = await sample(
      async () => Promise.all([store.findApplication('demo-api-key'), store.findOperation(7)]),
      runs,
    );
    console.log(
      `  of which: signature check ${(median(signature) * 1000).toFixed(1)} µs, ` +
        `replay guard ${median(replay).toFixed(2)} ms, journal open + finish ${median(journal).toFixed(2)} ms, ` +
        `key + operation lookups ${median(lookups).toFixed(2)} ms (bare call ${median(bare).toFixed(2)} ms)`,
    );

    /** Posts the next body, signed, to the local stack and returns the answer. */
    const post = async (call: 'getData' | 'getDataAsync') => {
      const payload = nextBody();
      const response = await fetch(`${stack.url}/demo/WebAPI/${call}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-api-key': 'demo-api-key',
          'x-svc-signature': signatureHeader(HASH, payload),
        },
        body: payload,
      });
      return (await response.json()) as { vlResult: number; data: unknown[] };
    };

    const http = await sample(async () => {
      const answer = await post('getData');
      if (answer.data.length !== 3) throw new Error('unexpected rows');
    }, runs);
    report('getData over HTTP (local stack)', http, 'bare procedure call', bare);

    // The asynchronous path for the same fast operation: journal, SQS send, worker, journal polling.
    const async = await sample(async () => {
      const answer = await post('getDataAsync');
      if (answer.vlResult !== 1 || answer.data.length !== 3) throw new Error('unexpected answer');
    }, runs / 2);
    report('getDataAsync over HTTP (local stack, SQS emulator)', async, 'getData over HTTP', http);
    console.log(
      `  extra latency of the async path: ${(median(async) - median(http)).toFixed(1)} ms (median)`,
    );
  } finally {
    await stack.stop();
  }
}
