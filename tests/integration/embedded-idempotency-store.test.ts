import type { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbeddedIdempotencyStore } from '../../shared/adapters/embedded/idempotency-store.js';
import type { Database } from '../../shared/core/database.js';
import { callKey, type RecordedAnswer } from '../../shared/core/idempotency.js';
import { demoDatabase } from '../support/demo.js';

/**
 * The keys' records on the embedded database (CONTRACT 5a): an answer is replayed byte for byte,
 * whatever its bytes (the body goes to its statement as base64 text, which keeps the statement
 * prepared, and is decoded by it).
 */
describe('keys of exactly once on the embedded demo database', () => {
  let pg: PGlite;
  let db: Database;

  beforeAll(async () => {
    ({ pg, db } = await demoDatabase());
  });
  afterAll(async () => {
    await pg.close();
  });

  const keyOf = (name: string) =>
    callKey(name, { tenant: 'demo', caller: 'application 1' }, () => 'f'.repeat(64), 24)!;

  it('records an answer of any bytes under a held key and finds it again, byte for byte', async () => {
    const store = createEmbeddedIdempotencyStore(db, 'demo');
    const every = Buffer.from(Array.from({ length: 512 }, (_, i) => i % 256));
    for (const [name, body] of [
      ['every-byte', every],
      ['empty', Buffer.alloc(0)],
      ['text', Buffer.from('{"vlResult":1,"data":[{"název":"Alfa – s.r.o."}]}')],
    ] as const) {
      const key = keyOf(name);
      // The third run of the statement is a prepared one's (its second run prepares it).
      const answer: RecordedAnswer = { status: 200, contentType: 'application/json', body, journalId: 7 };
      const hold = (await store.hold(key))!;
      try {
        expect(await hold.find()).toBeUndefined();
        await hold.commit(async () => ({
          value: undefined,
          record: { fingerprint: key.fingerprint, answer },
        }));
      } finally {
        await hold.release();
      }
      const found = await store.find(key.digest);
      expect(found?.fingerprint).toBe(key.fingerprint);
      expect(Buffer.compare(found!.answer.body!, body)).toBe(0);
      expect(found?.answer).toMatchObject({ status: 200, contentType: 'application/json', journalId: 7 });
    }
    const stored = await pg.query<{ n: number }>(
      `SELECT octet_length("BODY")::int AS n FROM dbo."SVC_IDEMPOTENCY" WHERE "KEY_DIGEST" = $1`,
      [keyOf('every-byte').digest],
    );
    expect(stored.rows).toEqual([{ n: 512 }]);
  });

  it('records an answer without a body (a job: its journal id) as none', async () => {
    const store = createEmbeddedIdempotencyStore(db, 'demo');
    const key = keyOf('no-body');
    const hold = (await store.hold(key))!;
    try {
      await hold.commit(async () => ({
        value: undefined,
        record: { fingerprint: key.fingerprint, answer: { status: 202, journalId: 9 } },
      }));
    } finally {
      await hold.release();
    }
    const found = await store.find(key.digest);
    expect(found?.answer.body).toBeUndefined();
    expect(found?.answer.journalId).toBe(9);
  });
});
