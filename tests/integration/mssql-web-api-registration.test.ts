import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMssqlDatabase } from '../../shared/adapters/mssql/index.js';
import { createMssqlWebApiStore } from '../../shared/adapters/mssql/web-api-store.js';
import type { Database } from '../../shared/core/database.js';
import { runMssqlScripts, mssqlUrl as url } from '../support/mssql.js';

/**
 * `npm run web-api -- operation` (docs/api.md "Adding an application or an operation") on a T-SQL
 * database: what it registers is what the Web API reads. (`application` writes no database: its
 * entry goes into the registry, tests/integration/web-api-registry-entry.test.ts.)
 */
describe.skipIf(!url)('Registering Web API operations on SQL Server (integration)', () => {
  let db: Database;
  const cli = (...args: string[]) => {
    const run = spawnSync('npx', ['tsx', 'infra/tools/web-api.ts', ...args], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    return { status: run.status, out: run.stdout.trim(), err: run.stderr.trim() };
  };

  beforeAll(async () => {
    db = createMssqlDatabase({ connectionString: url! });
    await runMssqlScripts(db);
  }, 300_000);
  afterAll(async () => {
    await db?.close();
  });

  it('adds an operation, then points it at another procedure; refuses what the service would refuse', async () => {
    const vltyp = String(5000 + Math.floor(Math.random() * 1000));
    const added = cli(
      'operation',
      url!,
      '--vltyp',
      vltyp,
      '--procedure',
      'dbo.WS_OP_SLEEP',
      '--row-name',
      'Nap',
    );
    expect(added.status, added.err).toBe(0);
    expect(JSON.parse(added.out)).toEqual({ ok: true, operation: Number(vltyp), outcome: 'added' });
    const store = createMssqlWebApiStore(db, 'demo');
    expect(await store.findOperation(Number(vltyp))).toEqual({
      vltyp: Number(vltyp),
      procedure: 'dbo.WS_OP_SLEEP',
      rowName: 'Nap',
    });
    const changed = cli(
      'operation',
      url!,
      '--vltyp',
      vltyp,
      '--procedure',
      'WS_OP_FAIL',
      '--row-name',
      'Fail',
    );
    expect(JSON.parse(changed.out)).toMatchObject({ outcome: 'changed' });
    expect(await store.findOperation(Number(vltyp))).toEqual({
      vltyp: Number(vltyp),
      procedure: 'dbo.WS_OP_FAIL',
      rowName: 'Fail',
    });
    for (const [args, message] of [
      [
        ['--vltyp', '997', '--procedure', 'dbo.X', '--row-name', 'X'],
        "--vltyp must be a whole number from 1 (997 is the service's own",
      ],
      [
        ['--vltyp', '5', '--procedure', 'dbo.NO_SUCH_PROC', '--row-name', 'X'],
        'No procedure dbo.NO_SUCH_PROC in this database',
      ],
      [
        ['--vltyp', '5', '--procedure', "x'; DROP TABLE y", '--row-name', 'X'],
        '--procedure must be NAME or schema.NAME',
      ],
      [
        ['--vltyp', '5', '--procedure', 'dbo.WS_OP_SLEEP', '--row-name', '1 bad'],
        '--row-name must be an XML name',
      ],
    ] as const) {
      const refused = cli('operation', url!, ...args);
      expect(refused.status).toBe(1);
      expect(refused.err).toContain(message);
    }
  }, 180_000);
});
