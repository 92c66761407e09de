/**
 * CONTRACT 4b across a restart of the local stack: each start begins from the same demo data, its
 * change feeds' rows included, so a sync token of an earlier start would name a batch that the new
 * start numbers again for other changes. Every start gives the feeds a new identity
 * (infra/local/demo-database.ts): such a token is 410 `sync_token_expired`, never an answer that
 * misses what the new start committed.
 */
import { describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { DEMO_AUTH } from '../support/demo.js';

const get = (stack: LocalStack, path: string) =>
  fetch(`${stack.url}${path}`, { headers: { authorization: DEMO_AUTH }, redirect: 'manual' });
/** The ERP changes a demo row's phone number (`POST /_local/erp/writes`). */
async function erpWrite(stack: LocalStack, telefon: string): Promise<void> {
  const response = await fetch(`${stack.url}/_local/erp/writes`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      writes: [{ table: 'SUBJECT', op: 'update', key: { ID: 8 }, set: { TELEFON: telefon } }],
    }),
  });
  expect(response.status).toBe(200);
  expect(await response.json()).toMatchObject({ committed: true });
}
/** Follows `next` links from `path` to the answer that says `sync`; that link's target. */
async function syncLink(stack: LocalStack, path: string): Promise<string> {
  for (let next = path; ; ) {
    const response = await get(stack, next);
    expect(response.status, next).toBe(200);
    await response.arrayBuffer();
    const match = /^<([^>]+)>; rel="(next|sync)"$/.exec(response.headers.get('link') ?? '');
    if (!match) throw new Error(`no next or sync link: ${response.headers.get('link')}`);
    if (match[2] === 'sync') return match[1]!;
    next = match[1]!;
  }
}

describe('getChanges across a restart of the local stack', () => {
  it('a sync token of an earlier start is 410 sync_token_expired, even once the new start has made more batches than it had', async () => {
    const FIRST = '/demo/JsonAPI/Data/getChanges/SUBJECT?rows=100';
    let stack = await startLocalStack({ port: 0 });
    let token: string;
    try {
      // A client in sync, three ERP writes each read on: its token stands for the third's batch.
      token = await syncLink(stack, FIRST);
      for (const telefon of ['+420 81', '+420 82', '+420 83']) {
        await erpWrite(stack, telefon);
        token = await syncLink(stack, token);
      }
    } finally {
      await stack.stop();
    }

    stack = await startLocalStack({ port: 0 });
    try {
      const refused = async () => {
        const response = await get(stack, token);
        expect(response.status).toBe(410);
        expect(response.headers.get('link')).toBeNull();
        const { error } = (await response.json()) as { error: { code: string; message: string } };
        expect(error.code).toBe('sync_token_expired');
        expect(error.message).toContain('start again without a token');
      };
      // At once: the new start's feed has not reached the token's batch.
      await refused();
      // Five writes, each stamped by a new sync's first page: the feed passes the token's batch,
      // which now numbers this start's changes (without a new feed identity the token was read on
      // from there, and the first of these writes and the demo data put back were never delivered).
      for (const telefon of ['+420 91', '+420 92', '+420 93', '+420 94', '+420 95']) {
        await erpWrite(stack, telefon);
        const page = await get(stack, '/demo/JsonAPI/Data/getChanges/SUBJECT?rows=1');
        expect(page.status).toBe(200);
        await page.arrayBuffer();
      }
      await refused();
      // Starting again without a token gives the table as this start has it.
      const fresh = await get(stack, FIRST);
      expect(fresh.status).toBe(200);
      const rows = ((await fresh.json()) as { SUBJECT: { ID: number; TELEFON?: string }[] }).SUBJECT;
      expect(rows.find((row) => row.ID === 8)?.TELEFON).toBe('+420 95');
    } finally {
      await stack.stop();
    }
  }, 180_000);
});
