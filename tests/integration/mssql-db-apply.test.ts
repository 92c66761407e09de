import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withDatabase, withLogin } from '../../infra/local/tsql-engine.js';
import { RELEASE_APPLY_LOCK, TAKE_APPLY_LOCK } from '../../infra/tools/tenant-database.js';
import { createMssqlDatabase } from '../../shared/adapters/mssql/index.js';
import { type Database, DatabasePermissionError } from '../../shared/core/database.js';
import { REAL_ERP_LAYOUT } from '../support/erp-layout.js';
import { isBabelfish, mssqlUrl as url } from '../support/mssql.js';

const run = promisify(execFile);
const dbApply = (connectionString: string, ...more: string[]) =>
  run('npx', ['tsx', 'infra/tools/db-apply.ts', connectionString, ...more], { timeout: 240_000 });

// `npm run db:apply -- <connection string>`: what a DBA runs on a tenant database.
describe.skipIf(!url)('npm run db:apply (integration)', () => {
  const name = `svc_apply_${randomBytes(4).toString('hex')}`;
  let server: Database;
  let target: string;

  beforeAll(async () => {
    server = createMssqlDatabase({ connectionString: url! });
    await server.query(`CREATE DATABASE ${name}`);
    target = withDatabase(url!, name);
  });
  afterAll(async () => {
    await server?.query(`DROP DATABASE IF EXISTS ${name}`).catch(() => undefined);
    await server?.close();
  });

  it('with --demo creates every object and the demo data in an empty database, and changes nothing when run again', async () => {
    const first = await dbApply(target, '--demo');
    expect(first.stdout).toMatch(
      /applied demo\/010-erp-schema\.sql, demo\/020-erp-data\.sql, service\/030-web-api\.sql, .*service\/050-change-feed\.sql, demo\/060-demo-procedures\.sql, demo\/070-demo-change-feed\.sql, service\/080-change-notifications\.sql, service\/090-idempotency\.sql in/,
    );
    const db = createMssqlDatabase({ connectionString: target });
    try {
      const count = async () =>
        (
          await db.query(
            'SELECT (SELECT COUNT(*) FROM dbo.DOKUMENT) AS d, (SELECT COUNT(*) FROM dbo.WS_OPERATION) AS o',
          )
        )[0];
      expect(await count()).toEqual({ d: 100_000, o: 6 });
      await dbApply(target, '--demo');
      expect(await count()).toEqual({ d: 100_000, o: 6 });
      // Without --demo: the service's scripts alone, nothing of the demo's added or changed.
      expect((await dbApply(target)).stdout).toMatch(
        /^applied service\/030-web-api\.sql, service\/040-webhook\.sql, service\/050-change-feed\.sql, service\/080-change-notifications\.sql, service\/090-idempotency\.sql in/m,
      );
      expect(await count()).toEqual({ d: 100_000, o: 6 });
    } finally {
      await db.close();
    }
  }, 300_000);

  it("gives SVC_JOURNAL of an earlier version the trace id's column and index, keeping its rows", async () => {
    const db = createMssqlDatabase({ connectionString: target });
    try {
      // As the version before trace context made it (the table is the service's: nothing else reads it here).
      await db.query('DROP INDEX IX_SVC_JOURNAL_TRACE ON dbo.SVC_JOURNAL');
      await db.query('ALTER TABLE dbo.SVC_JOURNAL DROP COLUMN TRACE_ID');
      await db.query("INSERT INTO dbo.SVC_JOURNAL (JOURNAL_ID, TENANT) VALUES (987654, N'demo')");
      await dbApply(target);
      expect(
        await db.query(
          'SELECT JOURNAL_ID AS id, TENANT AS tenant, TRACE_ID AS traceId FROM dbo.SVC_JOURNAL WHERE JOURNAL_ID = 987654',
        ),
      ).toEqual([{ id: 987654, tenant: 'demo', traceId: null }]);
      // SQL Server names the index as written; the T-SQL engine adds the table and a hash to it.
      const indexes = await db.query(
        "SELECT name FROM sys.indexes WHERE object_id = OBJECT_ID(N'dbo.SVC_JOURNAL') AND name IS NOT NULL",
      );
      expect(indexes.map((row) => String(row.name).toLowerCase())).toContainEqual(
        expect.stringMatching(/^ix_svc_journal_trace/),
      );
      await db.query('DELETE FROM dbo.SVC_JOURNAL WHERE JOURNAL_ID = 987654');
    } finally {
      await db.close();
    }
  }, 300_000);

  it('turns recording on for the tables of --change-feed (SUBJECT and DOKUMENT always, for the demo), idempotent', async () => {
    const recorded = async () => {
      const db = createMssqlDatabase({ connectionString: target });
      try {
        return (
          await db.query(
            'SELECT SOURCE_NAME AS name, FEED_ID AS feed FROM dbo.SVC_CHANGE_FEED ORDER BY SOURCE_NAME',
          )
        ).map((row) => `${row.name} ${row.feed}`);
      } finally {
        await db.close();
      }
    };
    const applied = await dbApply(target, '--change-feed', 'ucet');
    expect(applied.stdout).toMatch(/change feed: recording dbo\.ucet/);
    const first = await recorded();
    expect(first.map((row) => row.split(' ')[0])).toEqual(['DOKUMENT', 'SUBJECT', 'UCET']);
    // Again: the same recordings (a new FEED_ID would expire every token).
    await dbApply(target, '--change-feed', 'UCET');
    expect(await recorded()).toEqual(first);
    const missing = await dbApply(target, '--change-feed', 'NO_SUCH_TABLE').catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(missing).toMatchObject({ code: 1, stderr: expect.stringMatching(/no such table/) });
    const usage = await dbApply(target, '--change-feed', 'a;b').catch((error: { code: number }) => error);
    expect(usage).toMatchObject({ code: 2 });
  }, 300_000);

  it('creates the role of --role with the documented grants and a login in it, idempotent, never printing the password', async () => {
    const role = `svc_role_${randomBytes(3).toString('hex')}`;
    const login = `svc_login_${randomBytes(3).toString('hex')}`;
    const password = `Pw-${randomBytes(12).toString('hex')}`;
    const apply = () =>
      run(
        'npx',
        [
          'tsx',
          'infra/tools/db-apply.ts',
          target,
          '--role',
          role,
          '--read',
          'subject',
          '--execute',
          'DEMO_FILE_RECEIVED',
          '--login',
          login,
        ],
        { timeout: 240_000, env: { ...process.env, DB_LOGIN_PASSWORD: password } },
      );
    const first = await apply();
    expect(first.stdout).toContain(`role ${role}: SELECT, INSERT on dbo.SVCDOC`);
    expect(first.stdout).toContain(`role ${role}: SELECT on dbo.subject`);
    expect(first.stdout).toContain(`role ${role}: EXECUTE on dbo.DEMO_FILE_RECEIVED`);
    expect(first.stdout).toContain(`login and user ${login}: member of ${role}`);
    // Again: nothing refused, the same grants.
    const again = await apply();
    expect(again.stdout.split('\n').filter((line) => line.startsWith('role '))).toEqual(
      first.stdout.split('\n').filter((line) => line.startsWith('role ')),
    );
    expect(`${first.stdout}${first.stderr}${again.stdout}${again.stderr}`).not.toContain(password);
    // The login reads what it was granted, and nothing else.
    const asLogin = createMssqlDatabase({
      connectionString: withLogin(target, login, password),
    });
    try {
      expect((await asLogin.query('SELECT COUNT(*) AS n FROM dbo.SUBJECT'))[0]).toEqual({ n: 60 });
      await expect(asLogin.query('SELECT COUNT(*) AS n FROM dbo.UCET')).rejects.toBeInstanceOf(
        DatabasePermissionError,
      );
    } finally {
      await asLogin.close();
    }
    const unknown = await run(
      'npx',
      ['tsx', 'infra/tools/db-apply.ts', target, '--role', role, '--read', 'NO_SUCH'],
      {
        timeout: 240_000,
      },
    ).catch((error: { code: number; stderr: string }) => error);
    expect(unknown).toMatchObject({ code: 1, stderr: expect.stringContaining('no table or view "NO_SUCH"') });
    const bad = await dbApply(target, '--role', 'x;drop').catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(bad).toMatchObject({ code: 1, stderr: expect.stringContaining('must be a plain name') });
  }, 600_000);

  it('refuses a table whose names derived for the change feed would pass 128 characters, naming it and the limit, having written nothing', async () => {
    const table = (length: number) => `T${'X'.repeat(length - 1)}`;
    const db = createMssqlDatabase({ connectionString: target });
    try {
      for (const length of [107, 108])
        await db.query(
          `IF OBJECT_ID(N'dbo.${table(length)}', N'U') IS NULL CREATE TABLE dbo.${table(length)} (ID int NOT NULL PRIMARY KEY)`,
        );
      const feeds = async () =>
        (await db.query('SELECT SOURCE_NAME AS name FROM dbo.SVC_CHANGE_FEED ORDER BY 1')).map((r) => r.name);
      const before = await feeds();
      const refused = await dbApply(target, '--change-feed', `UCET,${table(108)}`).catch(
        (error: { code: number; stdout: string; stderr: string }) => error,
      );
      expect(refused).toMatchObject({ code: 1 });
      const { stderr } = refused as { stderr: string };
      expect(stderr).toContain(
        `db:apply: --change-feed: the change feed cannot record table ${table(108)}: its name has 108 characters, and the names derived from it (the longest, IX_SVC_CHANGES_<table>_BATCH, 21 more) would pass SQL Server's limit of 128 characters: a recorded table's name may have at most 107 characters; nothing was written`,
      );
      expect(await feeds()).toEqual(before);
      if (await isBabelfish(db)) {
        // The engine's departure: it catalogues a name over 63 characters under a shortened one
        // (INFORMATION_SCHEMA, sys.tables), so the service finds no such table at all: said so.
        const missing = await dbApply(target, '--change-feed', table(107)).catch(
          (error: { stderr: string }) => error,
        );
        expect((missing as { stderr: string }).stderr).toContain(
          `--change-feed: no such table dbo.${table(107)}`,
        );
        return;
      }
      // SQL Server: 107 characters make IX_SVC_CHANGES_<table>_BATCH exactly 128, and it records.
      expect((await dbApply(target, '--change-feed', table(107))).stdout).toContain(
        `change feed: recording dbo.${table(107)}`,
      );
      await db.query(`INSERT INTO dbo.${table(107)} (ID) VALUES (1), (2)`);
      expect(await db.query(`SELECT COUNT(*) AS n FROM dbo.SVC_CHANGES_${table(107)}`)).toEqual([{ n: 2 }]);
      // The procedure itself refuses, in the same words (a DBA may call it in SSMS).
      await expect(
        db.query('EXEC dbo.SVC_CHANGE_FEED_ENABLE @p1, @p2', ['dbo', table(108)]),
      ).rejects.toMatchObject({
        dbCode: '50003',
        message: expect.stringContaining("a recorded table's name may have at most 107 characters"),
      });
    } finally {
      await db.close();
    }
  }, 300_000);

  it('fails with exit code 1, naming the file, and never prints the password', async () => {
    const failed = await dbApply(
      'Server=127.0.0.1,1;User Id=someone;Password=never-shown-42;Encrypt=false;Connect Timeout=2',
    ).catch((error: { code: number; stdout: string; stderr: string }) => error);
    expect(failed).toMatchObject({ code: 1 });
    const { stdout, stderr } = failed as { stdout: string; stderr: string };
    expect(stderr).toMatch(/db:apply failed: /);
    expect(`${stdout}${stderr}`).not.toContain('never-shown-42');
  }, 60_000);
});

/** `npm run db:apply` started, with a promise of its end and one of its saying that it waits. */
function startDbApply(connectionString: string, ...more: string[]) {
  const child = spawn('npx', ['tsx', 'infra/tools/db-apply.ts', connectionString, ...more], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let told: () => void = () => undefined;
  const waiting = new Promise<void>((resolve) => {
    told = resolve;
  });
  child.stdout.on('data', (chunk) => {
    stdout += String(chunk);
    if (stdout.includes('waiting for another db:apply')) told();
  });
  child.stderr.on('data', (chunk) => {
    stderr += String(chunk);
  });
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout, stderr })),
  );
  return { waiting, done };
}

/**
 * Every object of the database's dbo schema, by type and name; the T-SQL engine names an unnamed
 * default constraint after an object id (`DF_ws_journal_19740`), which differs between databases.
 */
const objectsOf = async (db: Database) =>
  (
    await db.query(
      `SELECT o.type AS type, o.name AS name FROM sys.objects AS o JOIN sys.schemas AS s ON s.schema_id = o.schema_id
        WHERE s.name = 'dbo' ORDER BY o.type, o.name`,
    )
  )
    .map((row) => `${String(row.type).trim()} ${String(row.name).toLowerCase()}`)
    .map((object) => (object.startsWith('D ') ? object.replace(/_\d+$/, '_<id>') : object))
    .sort();

// Two `db:apply` at once on one database (issue 46): before the application lock they met halfway
// and one stopped with the engine's own text. Now they take turns.
describe.skipIf(!url)('two npm run db:apply at once on one database', () => {
  const suffix = randomBytes(4).toString('hex');
  const names = { once: `svc_once_${suffix}`, twice: `svc_twice_${suffix}`, held: `svc_held_${suffix}` };
  const targets = {} as Record<keyof typeof names, string>;
  let server: Database;

  beforeAll(async () => {
    server = createMssqlDatabase({ connectionString: url! });
    for (const [key, name] of Object.entries(names)) {
      await server.query(`CREATE DATABASE ${name}`);
      targets[key as keyof typeof names] = withDatabase(url!, name);
      const erp = createMssqlDatabase({ connectionString: targets[key as keyof typeof names] });
      try {
        for (const statement of REAL_ERP_LAYOUT) await erp.query(statement);
      } finally {
        await erp.close();
      }
    }
  }, 180_000);
  afterAll(async () => {
    for (const name of Object.values(names))
      await server?.query(`DROP DATABASE IF EXISTS ${name}`).catch(() => undefined);
    await server?.close();
  });

  /** Runs `act` while a session of the test holds the lock every db:apply takes on `target`. */
  async function holdingTheLock<T>(target: string, act: () => Promise<T>): Promise<T> {
    const holder = createMssqlDatabase({ connectionString: `${target};Application Name=lock-holder` });
    try {
      return await holder.transaction(async (session) => {
        expect(await session.query(TAKE_APPLY_LOCK, [1000])).toEqual([{ result: 0 }]);
        try {
          return await act();
        } finally {
          await session.query(RELEASE_APPLY_LOCK);
        }
      });
    } finally {
      await holder.close();
    }
  }

  it("take turns: both wait while the lock is held, then both end well, never with the engine's text, the database as after one run", async () => {
    const runs = await holdingTheLock(targets.twice, async () => {
      const started = [startDbApply(targets.twice), startDbApply(targets.twice)];
      // Both are under way, and waiting: then the lock is let go, and they race for it.
      await Promise.all(started.map((run) => run.waiting));
      return started;
    });
    const [first, second] = await Promise.all(runs.map((run) => run.done));
    for (const outcome of [first!, second!]) {
      expect(outcome.code, outcome.stderr).toBe(0);
      expect(outcome.stdout).toContain(
        'waiting for another db:apply on this database to finish (up to 600 s)',
      );
      expect(outcome.stdout).toMatch(/^applied service\/030-web-api\.sql, .* in [\d.]+ s$/m);
      expect(`${outcome.stdout}${outcome.stderr}`).not.toMatch(
        /duplicate key|concurrently|pg_type|violates|db:apply failed/,
      );
    }
    const once = await dbApply(targets.once);
    expect(once.stdout).not.toContain('waiting');
    const [twiceDb, onceDb] = [targets.twice, targets.once].map((connectionString) =>
      createMssqlDatabase({ connectionString }),
    );
    try {
      const objects = await objectsOf(twiceDb!);
      expect(objects).toContain('U ws_journal');
      expect(objects).toEqual(await objectsOf(onceDb!));
      const rows =
        'SELECT (SELECT COUNT(*) FROM dbo.WS_OPERATION) AS operations, (SELECT COUNT(*) FROM dbo.SVC_CHANGE_FEED) AS feeds';
      expect(await twiceDb!.query(rows)).toEqual(await onceDb!.query(rows));
    } finally {
      await twiceDb!.close();
      await onceDb!.close();
    }
  }, 600_000);

  it('stops past --wait with our message, having written nothing', async () => {
    const db = createMssqlDatabase({ connectionString: targets.held });
    try {
      const before = await objectsOf(db);
      const outcome = await holdingTheLock(
        targets.held,
        () => startDbApply(targets.held, '--wait', '2').done,
      );
      expect(outcome.code).toBe(1);
      expect(outcome.stdout).toContain('waiting for another db:apply on this database to finish (up to 2 s)');
      expect(outcome.stderr.trim().split('\n').at(-1)).toBe(
        'db:apply: another db:apply is running on this database (it holds the application lock "erp-integration-gateway db:apply"), and it did not finish within 2 s; nothing was written: run it again once the other has finished, or give --wait SECONDS to wait longer',
      );
      expect(await objectsOf(db)).toEqual(before);
      // Once it is free, the same run goes through.
      expect((await dbApply(targets.held, '--wait', '2')).stdout).toMatch(/^applied service\//m);
    } finally {
      await db.close();
    }
  }, 300_000);
});
