import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type EmbeddedDatabaseThread,
  openEmbeddedDatabaseThread,
} from '../../infra/local/embedded-thread.js';

/**
 * The local stack's embedded database on its own thread (infra/local/embedded-thread.ts): a
 * transaction's body runs in the main thread, its statements in the database's thread, prepared
 * there like statements outside transactions.
 */

let thread: EmbeddedDatabaseThread;

beforeAll(async () => {
  const pg = await PGlite.create();
  await pg.exec('CREATE SCHEMA dbo; CREATE TABLE dbo.ledger (id int PRIMARY KEY, amount int)');
  const dump = await pg.dumpDataDir('none');
  await pg.close();
  thread = await openEmbeddedDatabaseThread(new Uint8Array(await dump.arrayBuffer()));
});
afterAll(async () => {
  await thread?.close();
});

describe('the embedded database thread', () => {
  const read = 'SELECT * FROM ledger WHERE id = $1';
  const insert = 'INSERT INTO ledger (id, amount) VALUES ($1, $2)';

  it("prepares a transaction's statements in the database's thread", async () => {
    for (const id of [1, 2, 3]) {
      await thread.database.transaction(async (tx) => {
        await tx.query(insert, [id, 10]);
        await tx.query(read, [id]);
      });
    }
    const prepared = await thread.inspector.query<{ statement: string; runs: number }>(
      `SELECT statement, (generic_plans + custom_plans)::int AS runs FROM pg_prepared_statements
        WHERE name LIKE 'svc_s%' ORDER BY statement`,
    );
    expect(prepared.rows).toEqual([
      { statement: insert, runs: 2 },
      { statement: read, runs: 2 },
    ]);
  });

  it('runs a transaction again from its start, on this side, when a prepared statement no longer fits', async () => {
    await thread.inspector.query(`ALTER TABLE ledger ADD COLUMN note text DEFAULT 'new'`);
    const runs: string[] = [];
    const answer = await thread.database.transaction(async (tx) => {
      await tx.query(insert, [4, 40]);
      await tx.query('SAVEPOINT svc_read');
      try {
        const rows = await tx.query(read, [4]);
        runs.push('read');
        return rows;
      } catch {
        // The caller takes the failure as its own and goes on behind its save point.
        runs.push('failed, handled');
        await tx.query('ROLLBACK TO SAVEPOINT svc_read');
        return [];
      }
    });
    expect(runs).toEqual(['failed, handled', 'read']);
    expect(answer).toEqual([{ id: 4, amount: 40, note: 'new' }]);
    expect(await thread.database.query('SELECT count(*)::int AS n FROM ledger WHERE id = $1', [4])).toEqual([
      { n: 1 },
    ]);
    // And when the caller does not handle it: the same, once (the read prepared again first: every
    // statement was forgotten after the stale one).
    for (let run = 0; run < 2; run++) await thread.database.transaction((tx) => tx.query(read, [1]));
    await thread.inspector.query('ALTER TABLE ledger ADD COLUMN extra int DEFAULT 7');
    let attempts = 0;
    const again = await thread.database.transaction(async (tx) => {
      attempts++;
      return tx.query(read, [1]);
    });
    expect(attempts).toBe(2);
    expect(again).toEqual([{ id: 1, amount: 10, note: 'new', extra: 7 }]);
  });
});
