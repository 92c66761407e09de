import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { MAX_LIKE_WILDCARDS } from '../../shared/core/condition/index.js';
import { DEMO_AUTH } from '../support/demo.js';

/**
 * What one condition may cost (CONTRACT.md section 4): a LIKE pattern's wildcards are bounded, on
 * every database, and a condition that is allowed but slow holds no other request of the stack.
 */
let stack: LocalStack;

beforeAll(async () => {
  stack = await startLocalStack({ port: 0 });
});
afterAll(async () => {
  await stack?.stop();
});

const withCondition = (condition: string) =>
  fetch(
    `${stack.url}/demo/JsonAPI/Data/getDataWithCondition/DOKUMENT?condition=${encodeURIComponent(condition)}`,
    { headers: { authorization: DEMO_AUTH } },
  );

/**
 * A GET on a connection of its own, as another client's request arrives (the test process's
 * `fetch` would queue it behind its own request in flight to the same origin).
 */
function getAlone(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    request(url, { headers, agent: false }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    })
      .on('error', reject)
      .end();
  });
}

/** `count` wildcards: `%` and a class in turn, ending in a letter no text ends with, so no row matches. */
const pattern = (count: number) =>
  `${Array.from({ length: count }, (_, i) => (i % 2 === 0 ? '%' : '[a-z]')).join('')}Q`;

describe('The cost of a condition', () => {
  it(`refuses more than ${MAX_LIKE_WILDCARDS} LIKE wildcards with a 400 that names the limit`, async () => {
    const tooMany = [
      `POPIS LIKE '${pattern(MAX_LIKE_WILDCARDS + 1)}'`,
      // Spread over several patterns, and a pattern computed from literals, count alike.
      `POPIS LIKE '${pattern(6)}' OR CISLO LIKE '${pattern(6)}'`,
      `POPIS LIKE '${pattern(6)}' + '${pattern(6)}'`,
      `POPIS LIKE '${'_'.repeat(MAX_LIKE_WILDCARDS + 1)}'`,
    ];
    for (const condition of tooMany) {
      const response = await withCondition(condition);
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect([response.status, body.error.code], condition).toEqual([400, 'invalid_condition']);
      expect(body.error.message).toMatch(`more than ${MAX_LIKE_WILDCARDS} of %, _ and [...]`);
    }
    // Escaped wildcards and a single-character class are ordinary characters.
    const escaped = await withCondition(
      `POPIS LIKE '${pattern(MAX_LIKE_WILDCARDS)}' AND CISLO NOT LIKE '!%!%!%!%[_][_]' ESCAPE '!'`,
    );
    expect(escaped.status).toBe(200);
  });

  it('answers /health and requests that need no statement while the costliest allowed condition runs', async () => {
    // The most wildcards allowed, over long texts of all 100,000 rows: seconds of database work.
    const text = Array.from({ length: 12 }, () => 'ISNULL(POPIS, CISLO)').join(' + ');
    const condition = `${text} LIKE '${pattern(MAX_LIKE_WILDCARDS)}'`;
    // Warm: the route's function instance is loaded, so what is measured is the condition alone.
    expect((await withCondition('ID = 1')).status).toBe(200);
    const started = performance.now();
    let expensiveMs = 0;
    const expensive = withCondition(condition).then(async (response) => {
      expensiveMs = performance.now() - started;
      return { status: response.status, body: await response.text() };
    });
    const others: { what: string; ms: number; status: number; before: boolean }[] = [];
    // Sampled while it runs, each after the previous answer.
    await new Promise((resolve) => setTimeout(resolve, 100));
    for (let i = 0; i < 5; i++) {
      for (const [what, url, headers] of [
        ['/health', `${stack.url}/health`, {}],
        // Through a function (the gateway, the tenant registry, Basic authentication), refused before any statement.
        ['Data API without credentials', `${stack.url}/demo/JsonAPI/Data/getData/SUBJECT`, {}],
      ] as [string, string, Record<string, string>][]) {
        const t0 = performance.now();
        const status = await getAlone(url, headers);
        others.push({ what, ms: performance.now() - t0, status, before: expensiveMs === 0 });
      }
    }
    const answer = await expensive;
    expect(answer.status, answer.body.slice(0, 300)).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ DOKUMENT: [] });
    expect(others.map((other) => other.status)).toEqual(
      others.map((other) => (other.what === '/health' ? 200 : 401)),
    );
    // The samples came while the condition ran, and each took a small part of its time.
    const during = others.filter((other) => other.before);
    expect(during.length, JSON.stringify({ expensiveMs, others })).toBeGreaterThanOrEqual(4);
    const slowest = Math.max(...during.map((other) => other.ms));
    expect(slowest, JSON.stringify({ expensiveMs, others })).toBeLessThan(expensiveMs / 4);
  }, 120_000);
});
