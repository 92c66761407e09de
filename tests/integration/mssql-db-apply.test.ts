import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withDatabase, withLogin } from '../../infra/local/tsql-engine.js';
import { createMssqlDatabase } from '../../shared/adapters/mssql/index.js';
import { type Database, DatabasePermissionError } from '../../shared/core/database.js';
import { mssqlUrl as url } from '../support/mssql.js';

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
      /applied demo\/010-erp-schema\.sql, demo\/020-erp-data\.sql, service\/030-web-api\.sql, .*service\/050-change-feed\.sql, demo\/060-demo-procedures\.sql, demo\/070-demo-change-feed\.sql, service\/080-change-notifications\.sql in/,
    );
    const db = createMssqlDatabase({ connectionString: target });
    try {
      const count = async () =>
        (
          await db.query(
            'SELECT (SELECT COUNT(*) FROM dbo.DOKUMENT) AS d, (SELECT COUNT(*) FROM dbo.WS_OPERATION) AS o',
          )
        )[0];
      expect(await count()).toEqual({ d: 100_000, o: 4 });
      await dbApply(target, '--demo');
      expect(await count()).toEqual({ d: 100_000, o: 4 });
      // Without --demo: the service's scripts alone, nothing of the demo's added or changed.
      expect((await dbApply(target)).stdout).toMatch(
        /^applied service\/030-web-api\.sql, service\/040-webhook\.sql, service\/050-change-feed\.sql, service\/080-change-notifications\.sql in/m,
      );
      expect(await count()).toEqual({ d: 100_000, o: 4 });
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
