import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { DEMO_AUTH } from '../support/demo.js';

/**
 * A cold burst as a client meets it (issues 30 and 38): fifty requests at once of one tenant to one
 * route of a stack that has served nothing yet, with the documented defaults (each HTTP function at
 * most 64 instances, a tenant at most 8 requests in progress). On the T-SQL engine every instance
 * logs in for the first time. Each request is refused 429 at once (beyond the tenant's share) or
 * served 200: never HTTP API's 500 of a function past its capacity (CONTRACT section 2), and none
 * waits for a login past the acquire time-out (503).
 */

let stack: LocalStack;

beforeAll(async () => {
  stack = await startLocalStack({ port: 0 });
});
afterAll(async () => {
  await stack?.stop();
});

interface Answer {
  readonly status: number;
  readonly body: string;
  readonly retryAfter: string | null;
}

async function burst(count: number, path: string): Promise<Answer[]> {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const response = await fetch(`${stack.url}${path}`, { headers: { authorization: DEMO_AUTH } });
      const body = await response.text();
      return {
        status: response.status,
        body,
        retryAfter: response.headers.get('retry-after'),
      };
    }),
  );
}

describe('a cold burst', () => {
  it('answers each of 50 requests at once with a documented answer, and serves every one the share admits', async () => {
    const answers = await burst(50, '/demo/JsonAPI/Data/getRowsCount/DOKUMENT');
    const byStatus = (status: number) => answers.filter((answer) => answer.status === status);
    const counts = Object.fromEntries(
      [...new Set(answers.map((answer) => answer.status))].map((status) => [status, byStatus(status).length]),
    );
    // Nothing but the two answers of a tenant's share: no 500 of a function past its capacity,
    // no 503 for a login that took too long.
    for (const status of Object.keys(counts).map(Number))
      expect([200, 429], JSON.stringify(counts)).toContain(status);
    // Beyond the tenant's 8 requests in progress: the documented refusal.
    for (const answer of byStatus(429)) {
      expect(JSON.parse(answer.body).error.code).toBe('tenant_rate_limited');
      expect(answer.retryAfter).toBe('1');
    }
    // Every request the share admitted is served (at least the share: 8 were in progress at once).
    expect(byStatus(200).length).toBeGreaterThanOrEqual(8);
    for (const answer of byStatus(200)) {
      expect(JSON.parse(answer.body)).toEqual({ DOKUMENT: [{ rowsCount: expect.any(Number) }] });
    }
  }, 60_000);

  it('serves the same burst again from the instances it started, each in the share again at once', async () => {
    // The slots of the first burst are back: a warm burst meets the same limits, not left-overs.
    await new Promise((resolve) => setTimeout(resolve, 2100));
    const answers = await burst(50, '/demo/JsonAPI/Data/getRowsCount/DOKUMENT');
    expect(answers.filter((answer) => answer.status === 200).length).toBeGreaterThanOrEqual(8);
    expect(answers.every((answer) => [200, 429].includes(answer.status))).toBe(true);
  }, 60_000);
});
