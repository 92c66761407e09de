import type { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbeddedIdempotencyStore } from '../../shared/adapters/embedded/idempotency-store.js';
import { createEmbeddedWebApiStore } from '../../shared/adapters/embedded/web-api-store.js';
import { tenantDigest } from '../../shared/adapters/sql-common/web-api-store.js';
import type { Database } from '../../shared/core/database.js';
import { getData, type WebApiContext } from '../../shared/core/web-api/calls.js';
import { validateEnvelope } from '../../shared/core/web-api/envelope.js';
import { signatureHeader } from '../../shared/core/web-api/signature.js';
import type { JournalOpening } from '../../shared/core/web-api/store.js';
import { demoDatabase } from '../support/demo.js';
import { demoPolicy, refusal } from '../support/web-api-core.js';

describe('Replay claim and journal in one statement, on the embedded demo database', () => {
  let pg: PGlite;
  let db: Database;
  const opening: JournalOpening = {
    applicationId: 1,
    vltyp: 1001,
    mode: 'sync',
    request: '{"vltyp":1001}',
    requestId: 'claim-test',
  };
  const journalRows = async (requestId: string) =>
    Number(
      (
        await pg.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM dbo."WS_JOURNAL" WHERE "REQUEST_ID" = $1`,
          [requestId],
        )
      ).rows[0]!.n,
    );

  beforeAll(async () => {
    ({ pg, db } = await demoDatabase());
  });
  afterAll(async () => {
    await pg.close();
  });

  it('leaves no claim behind when the journal row cannot be written: the same request is taken on retry', async () => {
    const store = createEmbeddedWebApiStore(db, 'demo');
    const claim = { applicationId: 1, requestDigest: 'u'.repeat(64), holdSeconds: 300 };
    // A call mode the journal's check constraint refuses: the journal insert fails after the claim.
    const unwritable = { ...opening, mode: 'bogus', requestId: 'unwritable' } as unknown as JournalOpening;
    await expect(store.claimAndOpenJournal(claim, unwritable)).rejects.toMatchObject({ dbCode: '23514' });
    expect(await journalRows('unwritable')).toBe(0);
    const id = await store.claimAndOpenJournal(claim, { ...opening, requestId: 'retried' });
    expect(id).toEqual(expect.any(Number));
    expect(await journalRows('retried')).toBe(1);
  });

  it('journals the first of many identical requests fired at once through two store instances, and only it', async () => {
    // Two stores stand for two Lambdas; the unique key in the database decides, not process memory.
    const stores = [createEmbeddedWebApiStore(db, 'demo'), createEmbeddedWebApiStore(db, 'demo')];
    const claim = { applicationId: 1, requestDigest: 'c'.repeat(64), holdSeconds: 300 };
    const ids = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        stores[i % 2]!.claimAndOpenJournal(claim, { ...opening, requestId: 'concurrent' }),
      ),
    );
    expect(ids.filter((id) => id !== undefined)).toHaveLength(1);
    expect(await journalRows('concurrent')).toBe(1);
    const entry = await stores[1]!.readJournal(ids.find((id) => id !== undefined)!);
    expect(entry).toMatchObject({
      applicationId: 1,
      vltyp: 1001,
      state: 'running',
      request: '{"vltyp":1001}',
    });
    // The plain claim sees the same key as taken.
    expect(await stores[0]!.claimRequest(1, 'c'.repeat(64), 300)).toBe(false);
  });

  it('keeps claims apart per application, and takes an expired claim over', async () => {
    const store = createEmbeddedWebApiStore(db, 'demo');
    const digest = 'd'.repeat(64);
    expect(
      await store.claimAndOpenJournal({ applicationId: 1, requestDigest: digest, holdSeconds: 300 }, opening),
    ).toBeTypeOf('number');
    expect(
      await store.claimAndOpenJournal(
        { applicationId: 2, requestDigest: digest, holdSeconds: 300 },
        { ...opening, applicationId: 2 },
      ),
    ).toBeTypeOf('number');
    await pg.query(
      `UPDATE dbo."WS_REPLAY_GUARD" SET "EXPIRES_AT" = "EXPIRES_AT" - interval '1 hour' WHERE "REQUEST_DIGEST" = $1`,
      [tenantDigest('demo', digest)],
    );
    expect(
      await store.claimAndOpenJournal({ applicationId: 1, requestDigest: digest, holdSeconds: 300 }, opening),
    ).toBeTypeOf('number');
    expect(
      await store.claimAndOpenJournal({ applicationId: 1, requestDigest: digest, holdSeconds: 300 }, opening),
    ).toBeUndefined();
  });

  it('a signed getData makes four statements: claim and journal, then in one transaction the save point, the operation and the journal end', async () => {
    const statements: string[] = [];
    const note = (sql: string) => statements.push(sql.replace(/\s+/g, ' ').trim().slice(0, 40));
    const counted: Database = {
      ...db,
      query: (sql, params) => {
        note(sql);
        return db.query(sql, params);
      },
      // The call's own transaction's statements count too.
      transaction: (fn) =>
        db.transaction((tx) =>
          fn({
            ...tx,
            query: (sql, params, options) => {
              note(sql);
              return tx.query(sql, params, options);
            },
          }),
        ),
    };
    const store = createEmbeddedWebApiStore(counted, 'demo');
    // Lookups as a warm process has them (cached); here read once up front.
    const application = (await store.findApplication('demo-api-key'))!;
    const operation = (await store.findOperation(1001))!;
    statements.length = 0;
    const ctx: WebApiContext = {
      tenant: 'demo',
      keys: createEmbeddedIdempotencyStore(counted, 'demo'),
      store: { ...store, findApplication: async () => application, findOperation: async () => operation },
      requestId: 'round-trips',
      policy: demoPolicy,
    };
    const body = Buffer.from(JSON.stringify({ vltyp: 1001, params: [{ nazev: 'alfa', round: 'trips' }] }));
    const call = {
      apiKey: 'demo-api-key',
      signature: signatureHeader('demo-api-hash', body),
      body,
      decode: () => validateEnvelope(JSON.parse(body.toString())),
    };
    const result = await getData(ctx, call);
    expect(result.answer).toMatchObject({ vlResult: 1, data: [{ nazev: 'Alfa Trade s.r.o.' }] });
    const withoutSweep = statements.filter((sql) => !sql.startsWith('DELETE'));
    expect(withoutSweep).toHaveLength(4);
    expect(withoutSweep[0]).toMatch(/^WITH "claim" AS \(INSERT INTO dbo."WS_/);
    expect(withoutSweep.slice(1)).toEqual([
      'SAVEPOINT svc_operation',
      expect.stringMatching(/^SELECT \* FROM "dbo"."WS_OP_/),
      expect.stringMatching(/^UPDATE dbo."WS_JOURNAL"/),
    ]);
    // Journaled and finished before the answer left; the same signed bytes again are 409/105.
    const entry = await store.readJournal(result.answer.id!);
    expect(entry).toMatchObject({ state: 'finished', answer: JSON.stringify(result.answer) });
    const again = await refusal(getData(ctx, call));
    expect(again.errorCode).toBe('105');
    expect(await journalRows('round-trips')).toBe(1);
  });

  it('a replay of a call refused for its envelope or vltyp is still 409, and nothing is journaled', async () => {
    const store = createEmbeddedWebApiStore(db, 'demo');
    const ctx: WebApiContext = {
      tenant: 'demo',
      store,
      keys: createEmbeddedIdempotencyStore(db, 'demo'),
      requestId: 'refused',
      policy: demoPolicy,
    };
    for (const [text, code] of [
      ['{"vltyp":"x"}', '100'],
      ['{"vltyp":424242}', '110'],
    ] as const) {
      const body = Buffer.from(text);
      const call = {
        apiKey: 'demo-api-key',
        signature: signatureHeader('demo-api-hash', body),
        body,
        decode: () => validateEnvelope(JSON.parse(body.toString())),
      };
      expect((await refusal(getData(ctx, call))).errorCode).toBe(code);
      expect((await refusal(getData(ctx, call))).errorCode).toBe('105');
    }
    expect(await journalRows('refused')).toBe(0);
  });
});
