import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { DEMO_AUTH } from '../support/demo.js';
import { envelope, signedCall } from '../support/web-api.js';
import { LARGE_SHARE, memory, printFigures } from './figures.js';

/** Sustained mixed load: `RELIABILITY_LOAD_SECONDS` (default 20) at `RELIABILITY_CONCURRENCY` (16). */
const SECONDS = Number(process.env.RELIABILITY_LOAD_SECONDS ?? 20);
const CONCURRENCY = Number(process.env.RELIABILITY_CONCURRENCY ?? 16);

let stack: LocalStack;
beforeAll(async () => {
  stack = await startLocalStack({ port: 0, env: { WEBHOOK_RETRY_SCHEDULE: '1,1,1', ...LARGE_SHARE } });
});
afterAll(async () => {
  await stack?.stop();
});

interface Call {
  readonly name: string;
  readonly expected: number;
  send(i: number): Promise<Response>;
}

const auth = { authorization: DEMO_AUTH };
let unique = 0;

function calls(): Call[] {
  const get = (path: string) => fetch(`${stack.url}${path}`, { headers: auth, redirect: 'manual' });
  const web = (operation: string, body: string) => {
    // Each call different bytes, so replay protection never refuses a load call.
    const call = signedCall(`${body}${' '.repeat(unique++ % 64)}`);
    return fetch(`${stack.url}/demo/WebAPI/${operation}`, {
      method: 'POST',
      headers: call.headers,
      body: call.body,
    });
  };
  return [
    { name: 'health', expected: 200, send: () => fetch(`${stack.url}/health`) },
    { name: 'getRowsCount', expected: 200, send: () => get('/demo/JsonAPI/Data/getRowsCount/SUBJECT') },
    {
      name: 'getDataWithCondition',
      expected: 200,
      send: (i) =>
        get(
          `/demo/JsonAPI/Data/getDataWithCondition/SUBJECT?condition=${encodeURIComponent(`ID > ${i % 50}`)}`,
        ),
    },
    {
      name: 'getDataPaginate',
      expected: 200,
      send: (i) =>
        get(`/demo/JsonAPI/Data/getDataPaginate/DOKUMENT?fromRow=${1 + ((i * 97) % 5000)}&rows=100`),
    },
    { name: 'getData SUBJECT', expected: 200, send: () => get('/demo/JsonAPI/Data/getData/SUBJECT') },
    {
      name: 'Web API test',
      expected: 200,
      send: () => fetch(`${stack.url}/demo/WebAPI/test`, { headers: { 'x-api-key': 'demo-api-key' } }),
    },
    {
      name: 'Web API getData',
      expected: 200,
      send: () => web('getData', envelope(1001, [{ nazev: 'alfa' }])),
    },
    {
      name: 'document received',
      expected: 202,
      send: (i) =>
        fetch(`${stack.url}/_local/documents/received`, {
          method: 'POST',
          body: JSON.stringify({ subjectId: 1, documentId: 1_000_000 + i }),
        }),
    },
    { name: 'unknown route', expected: 404, send: () => get('/demo/JsonAPI/Data/nothing/SUBJECT') },
    {
      name: 'bad condition',
      expected: 400,
      send: () => get('/demo/JsonAPI/Data/getDataWithCondition/SUBJECT?condition=ID%3D%3D'),
    },
  ];
}

describe('sustained mixed load', () => {
  it(`holds ${CONCURRENCY} concurrent clients for ${SECONDS} s with no error and bounded memory`, async () => {
    const mix = calls();
    // Warm every route (handler modules, caches) before the memory baseline.
    for (const call of mix) await (await call.send(0)).arrayBuffer();
    const before = memory();
    const errors: string[] = [];
    const counts = new Map<string, number>();
    const latencies: number[] = [];
    let sent = 0;
    const end = Date.now() + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (Date.now() < end) {
          const i = sent++;
          const call = mix[i % mix.length]!;
          const started = performance.now();
          try {
            const response = await call.send(i);
            await response.arrayBuffer();
            if (response.status !== call.expected) errors.push(`${call.name}: ${response.status}`);
          } catch (error) {
            errors.push(`${call.name}: ${(error as Error).message}`);
          }
          latencies.push(performance.now() - started);
          counts.set(call.name, (counts.get(call.name) ?? 0) + 1);
        }
      }),
    );
    const after = memory();
    latencies.sort((a, b) => a - b);
    const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
    printFigures('load (mixed routes, sustained)', [
      {
        requests: sent,
        concurrency: CONCURRENCY,
        seconds: SECONDS,
        errors: errors.length,
        perSecond: sent / SECONDS,
        p50ms: at(0.5),
        p99ms: at(0.99),
      },
      {
        rssBeforeMb: before.rssMb,
        rssAfterMb: after.rssMb,
        heapBeforeMb: before.heapMb,
        heapAfterMb: after.heapMb,
      },
      ...[...counts].map(([name, n]) => ({ route: name.replace(/ /g, '_'), requests: n })),
    ]);
    expect(errors.slice(0, 10)).toEqual([]);
    // Every client got through several rounds (how many is a figure, not a pass mark).
    expect(sent).toBeGreaterThan(CONCURRENCY * 2);
    // Growth stays bounded: what a load of this size may legitimately keep (caches, pools).
    expect(after.heapMb - before.heapMb).toBeLessThan(150);
    expect((await fetch(`${stack.url}/health`)).status).toBe(200);
  });
});
