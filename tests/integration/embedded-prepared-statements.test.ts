import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createEmbeddedDatabase } from '../../shared/adapters/embedded/index.js';
import { preparedStatements } from '../../shared/adapters/embedded/prepared-statements.js';
import { DatabaseStatementError } from '../../shared/core/database.js';

let pg: PGlite;

beforeAll(async () => {
  pg = await PGlite.create();
  await pg.exec(`CREATE TABLE item (id int PRIMARY KEY, name text, price numeric(10,2), at timestamp, data bytea);
    INSERT INTO item VALUES (1, 'one', 1.50, '2024-01-02 03:04:05', '\\x0102'), (2, NULL, NULL, NULL, NULL);`);
});
afterAll(async () => {
  await pg?.close();
});

/** Our statements prepared in the engine's session, by text. */
async function preparedTexts(): Promise<string[]> {
  const rows = await pg.query<{ statement: string }>(
    `SELECT statement FROM pg_prepared_statements WHERE name LIKE 'svc_s%' ORDER BY prepare_time`,
  );
  return rows.rows.map((r) => r.statement);
}

describe('Function: preparedStatements (embedded)', () => {
  const statements = () => preparedStatements(pg);

  beforeEach(async () => {
    await pg.exec('DEALLOCATE ALL');
  });

  it('answers as PGlite.query does: rows, fields, affected rows, nulls and parameter text', async () => {
    const sql =
      'SELECT id, name, price, at, data, $1::int + 1 AS next, $2::text AS t, $3::bool AS b, $4::int8 AS big FROM item WHERE id >= $5 ORDER BY id';
    const params = [41, 'x', true, 9007199254740993n, 1];
    const expected = await pg.query(sql, params);
    for (let run = 0; run < 3; run++) {
      const result = await statements().run(sql, params);
      expect(result.rows).toEqual(expected.rows);
      expect(result.fields).toEqual(expected.fields);
    }
    const update = await statements().run('UPDATE item SET name = name WHERE id > $1', [0]);
    expect(update.affectedRows).toBe(2);
    expect((await statements().run('SELECT $1::text AS v', [null])).rows).toEqual([{ v: null }]);
  });

  it('prepares a text on its second run, not its first, and reuses it after', async () => {
    const sql = 'SELECT name FROM item WHERE id = $1';
    await statements().run(sql, [1]);
    expect(await preparedTexts()).toEqual([]);
    await statements().run(sql, [1]);
    expect(await preparedTexts()).toEqual([sql]);
    const again = await statements().run(sql, [2]);
    expect(again.rows).toEqual([{ name: null }]);
    expect(await preparedTexts()).toEqual([sql]);
    // Run on its second and third runs: the one prepared statement served both.
    const runs = await pg.query<{ runs: number }>(
      `SELECT (generic_plans + custom_plans)::int AS runs FROM pg_prepared_statements WHERE statement = $1`,
      [sql],
    );
    expect(runs.rows).toEqual([{ runs: 2 }]);
  });

  it('keeps a bounded number prepared, closing the least recently used', async () => {
    for (let i = 0; i < 300; i++) {
      const sql = `SELECT ${i} AS n, $1::int AS p`;
      await statements().run(sql, [i]);
      expect((await statements().run(sql, [i])).rows).toEqual([{ n: i, p: i }]);
    }
    await statements().run('SELECT 1', []);
    const texts = await preparedTexts();
    expect(texts.length).toBe(256);
    expect(texts).toContain('SELECT 299 AS n, $1::int AS p');
    expect(texts).not.toContain('SELECT 0 AS n, $1::int AS p');
  });

  it('recovers from a failure while a statement is being prepared or run', async () => {
    const failing = 'SELECT 10 / $1::int AS q';
    await statements().run(failing, [5]);
    // Prepared on this run, which fails after the parse: the name must not be left in the way.
    await expect(statements().run(failing, [0])).rejects.toMatchObject({ code: '22012' });
    expect((await statements().run(failing, [2])).rows).toEqual([{ q: 5 }]);
    expect((await statements().run(failing, [5])).rows).toEqual([{ q: 2 }]);
    await expect(statements().run('SELEC 1', [])).rejects.toMatchObject({ code: '42601' });
    await expect(statements().run('SELEC 1', [])).rejects.toMatchObject({ code: '42601' });
    expect((await statements().run('SELECT 3 AS three', [])).rows).toEqual([{ three: 3 }]);
  });

  it('answers the new columns when a prepared SELECT * meets a changed table', async () => {
    await pg.exec('CREATE TABLE shape (id int)');
    await pg.exec('INSERT INTO shape VALUES (1)');
    const sql = 'SELECT * FROM shape WHERE id = $1';
    await statements().run(sql, [1]);
    await statements().run(sql, [1]);
    expect(await preparedTexts()).toContain(sql);
    await pg.exec(`ALTER TABLE shape ADD COLUMN label text DEFAULT 'new'`);
    expect((await statements().run(sql, [1])).rows).toEqual([{ id: 1, label: 'new' }]);
    expect((await statements().run(sql, [1])).rows).toEqual([{ id: 1, label: 'new' }]);
  });

  it('prepares a statement again when it was deallocated behind the cache', async () => {
    const sql = 'SELECT $1::int + 100 AS n';
    await statements().run(sql, [1]);
    await statements().run(sql, [1]);
    expect(await preparedTexts()).toEqual([sql]);
    await pg.exec('DEALLOCATE ALL');
    expect((await statements().run(sql, [2])).rows).toEqual([{ n: 102 }]);
    expect((await statements().run(sql, [3])).rows).toEqual([{ n: 103 }]);
    expect(await preparedTexts()).toEqual([sql]);
  });

  it('sends bytes, dates and objects through PGlite.query, serialized by type', async () => {
    const sql = 'SELECT $1::bytea AS b, $2::timestamptz AS d, $3::jsonb AS j';
    const params = [new Uint8Array([1, 2, 255]), new Date('2024-05-06T07:08:09Z'), { a: [1, 'x'] }];
    for (let run = 0; run < 2; run++) {
      const [row] = (await statements().run(sql, params)).rows as Record<string, unknown>[];
      expect(Array.from(row!.b as Uint8Array)).toEqual([1, 2, 255]);
      expect(row!.d).toEqual(new Date('2024-05-06T07:08:09Z'));
      expect(row!.j).toEqual({ a: [1, 'x'] });
    }
    expect(await preparedTexts()).toEqual([]);
  });

  it('passes notices on and uses the parsers it is given', async () => {
    await pg.exec(`CREATE FUNCTION noisy(n int) RETURNS int LANGUAGE plpgsql AS $$
      BEGIN RAISE NOTICE 'noisy' USING DETAIL = n::text; RETURN n; END $$`);
    const notices: string[] = [];
    const options = {
      parsers: { 23: (v: string) => `int:${v}` },
      onNotice: (n: { detail?: string }) => notices.push(String(n.detail)),
    };
    for (let run = 0; run < 3; run++) {
      expect((await statements().run('SELECT noisy($1) AS n', [run], options)).rows).toEqual([
        { n: `int:${run}` },
      ]);
    }
    expect(notices).toEqual(['0', '1', '2']);
    expect((await statements().run('SELECT noisy($1) AS n', [7])).rows).toEqual([{ n: 7 }]);
  });

  it('runs concurrent statements one at a time, each with its own answer', async () => {
    const sql = 'SELECT $1::int * 2 AS doubled';
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        statements()
          .run(sql, [i])
          .then((r) => r.rows[0]),
      ),
    );
    expect(answers).toEqual(Array.from({ length: 50 }, (_, i) => ({ doubled: i * 2 })));
  });

  it('waits for a transaction, whose statements are its own, and shares one cache per instance', async () => {
    const db = createEmbeddedDatabase(pg);
    const other = createEmbeddedDatabase(pg);
    const sql = 'SELECT count(*)::int AS n FROM item WHERE id = $1';
    await db.query(sql, [1]);
    await other.query(sql, [1]);
    expect(await preparedTexts()).toEqual([sql]);
    let outside: Promise<unknown> | undefined;
    await db.transaction(async (tx) => {
      await tx.query('INSERT INTO item (id) VALUES ($1)', [99]);
      outside = other.query(sql, [99]);
      await new Promise((resolve) => setTimeout(resolve, 20));
      await tx.query('DELETE FROM item WHERE id = $1', [99]);
    });
    expect(await outside).toEqual([{ n: 0 }]);
    await expect(db.query('SELECT 1 / $1::int', [0])).rejects.toBeInstanceOf(DatabaseStatementError);
    await expect(db.query('SELECT 1 / $1::int', [0])).rejects.toMatchObject({ dbCode: '22012' });
  });

  it("prepares a transaction's statements too, which stay prepared whichever way it ends", async () => {
    const db = createEmbeddedDatabase(pg);
    const insert = 'INSERT INTO item (id, name) VALUES ($1, $2)';
    const count = 'SELECT count(*)::int AS n FROM item WHERE id >= $1';
    for (const id of [100, 101]) await db.transaction((tx) => tx.query(insert, [id, 'committed']));
    expect(await preparedTexts()).toEqual([insert]);
    // Rolled back after it prepared a statement (the text's second run): the statement stays, the
    // rows go, and the transaction's reads see its own writes.
    await expect(
      db.transaction(async (tx) => {
        await tx.query(count, [100]);
        await tx.query(insert, [102, 'rolled back']);
        expect(await tx.query(count, [100])).toEqual([{ n: 3 }]);
        throw new Error('caller gives up');
      }),
    ).rejects.toThrow('caller gives up');
    expect((await preparedTexts()).sort()).toEqual([insert, count].sort());
    expect(await db.query(count, [100])).toEqual([{ n: 2 }]);
    // A statement that fails in a transaction (after its parse) aborts it as before, keeps its
    // code, and leaves nothing in the way of the next transaction's run of it.
    const divide = 'SELECT 10 / $1::int AS q';
    await db.transaction((tx) => tx.query(divide, [5]));
    await expect(db.transaction((tx) => tx.query(divide, [0]))).rejects.toMatchObject({ dbCode: '22012' });
    expect(await db.transaction((tx) => tx.query(divide, [2]))).toEqual([{ q: 5 }]);
    // A save point and its rollback, as a Web API call's procedure runs: the work after it commits.
    await db.transaction(async (tx) => {
      await tx.query('SAVEPOINT svc_test', []);
      await expect(tx.query(divide, [0])).rejects.toMatchObject({ dbCode: '22012' });
      await tx.query('ROLLBACK TO SAVEPOINT svc_test', []);
      await tx.query(insert, [103, 'after the save point']);
    });
    expect(await db.query(count, [100])).toEqual([{ n: 3 }]);
    await pg.exec('DELETE FROM item WHERE id >= 100');
  });

  it('runs a transaction again from its start when a statement prepared earlier no longer fits', async () => {
    const db = createEmbeddedDatabase(pg);
    await pg.exec(`CREATE TABLE ledger (id int PRIMARY KEY, amount int)`);
    const read = 'SELECT * FROM ledger WHERE id = $1';
    const insert = 'INSERT INTO ledger (id, amount) VALUES ($1, $2)';
    for (const id of [1, 2]) {
      await db.transaction(async (tx) => {
        await tx.query(insert, [id, 10]);
        await tx.query(read, [id]);
      });
    }
    expect((await preparedTexts()).sort()).toEqual([insert, read].sort());
    // The table changes behind the prepared SELECT *: its first run in the next transaction is
    // refused (the transaction aborted), even where the caller takes the failure as its own and
    // goes on behind a save point. The whole transaction runs again, once, and commits its rows.
    await pg.exec(`ALTER TABLE ledger ADD COLUMN note text DEFAULT 'new'`);
    const runs: string[] = [];
    const answer = await db.transaction(async (tx) => {
      await tx.query(insert, [3, 30]);
      await tx.query('SAVEPOINT svc_read', []);
      try {
        const rows = await tx.query(read, [3]);
        runs.push('read');
        return rows;
      } catch {
        runs.push('failed, handled');
        await tx.query('ROLLBACK TO SAVEPOINT svc_read', []);
        return [];
      }
    });
    expect(runs).toEqual(['failed, handled', 'read']);
    expect(answer).toEqual([{ id: 3, amount: 30, note: 'new' }]);
    expect(await db.query('SELECT count(*)::int AS n FROM ledger', [])).toEqual([{ n: 3 }]);
    // Deallocated behind the cache: the same, and the statements are prepared again after.
    await pg.exec('DEALLOCATE ALL');
    let attempts = 0;
    await db.transaction(async (tx) => {
      attempts++;
      await tx.query(insert, [4, 40]);
    });
    expect(attempts).toBe(1);
    expect(await db.query('SELECT id FROM ledger WHERE id = $1', [4])).toEqual([{ id: 4 }]);
    await pg.exec('DROP TABLE ledger');
  });

  it("runs a transaction's statements on PGlite's own prepared path, not its parse of every run", async () => {
    const db = createEmbeddedDatabase(pg);
    const sql = 'SELECT $1::int + 1 AS n';
    for (let run = 0; run < 3; run++) await db.transaction((tx) => tx.query(sql, [run]));
    const runs = await pg.query<{ runs: number }>(
      'SELECT (generic_plans + custom_plans)::int AS runs FROM pg_prepared_statements WHERE statement = $1',
      [sql],
    );
    // Prepared on the second transaction's run, reused by the third.
    expect(runs.rows).toEqual([{ runs: 2 }]);
  });
});
