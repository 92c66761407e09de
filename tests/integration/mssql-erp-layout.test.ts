import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withDatabase } from '../../infra/local/tsql-engine.js';
import { createMssqlDatabase } from '../../shared/adapters/mssql/index.js';
import type { Database } from '../../shared/core/database.js';
import { mssqlUrl as url } from '../support/mssql.js';

const run = promisify(execFile);
type Outcome = { code?: number; stdout: string; stderr: string };
const dbApply = (connectionString: string, ...more: string[]): Promise<Outcome> =>
  run('npx', ['tsx', 'infra/tools/db-apply.ts', connectionString, ...more], { timeout: 240_000 }).catch(
    (error: Outcome) => error,
  );

/**
 * A tenant's database as the ERP has it before the service (CONTRACT.md section 7): its own
 * SUBJECT, DOKUMENT, SVCDOC (no column of the service's, one of its own), WS_APPLICATION, its own
 * V_DOKUMENT_SOUBOR (another definition than the demo's), rows in every table, and a table, a view
 * and a procedure the service knows nothing of.
 */
const ERP_LAYOUT = [
  `CREATE TABLE dbo.SUBJECT (ID int NOT NULL PRIMARY KEY, NAZEV nvarchar(100) NOT NULL, ICO nvarchar(8) NULL,
     WEBHOOK_URL nvarchar(500) NULL, SECRET_WEBHOOK nvarchar(200) NULL, ERP_KATEGORIE nvarchar(20) NULL)`,
  `CREATE TABLE dbo.DOKUMENT (ID int NOT NULL PRIMARY KEY, CISLO nvarchar(20) NOT NULL, SUBJECT_ID int NULL,
     DOKUMENTFILEGUID uniqueidentifier NULL, ERP_STREDISKO nvarchar(10) NULL)`,
  `CREATE TABLE dbo.SVCDOC (FILEGUID uniqueidentifier NOT NULL PRIMARY KEY, FILENAME nvarchar(260) NOT NULL,
     CONTENT_TYPE nvarchar(200) NULL, SIZE_BYTES bigint NOT NULL, CONTENT varbinary(max) NOT NULL,
     ERP_ARCHIV smallint NULL)`,
  `CREATE TABLE dbo.WS_APPLICATION (ID int NOT NULL PRIMARY KEY, NAZEV nvarchar(100) NULL,
     API_KEY nvarchar(100) NOT NULL, API_HASH nvarchar(200) NOT NULL, AKTIVNI smallint NOT NULL, ERP_POZNAMKA nvarchar(50) NULL)`,
  `CREATE TABLE dbo.ERP_AUDIT (ID int NOT NULL PRIMARY KEY, UDALOST nvarchar(100) NOT NULL)`,
  `CREATE VIEW dbo.V_DOKUMENT_SOUBOR AS
     SELECT d.DOKUMENTFILEGUID, f.FILENAME, d.CISLO AS ERP_CISLO FROM dbo.DOKUMENT AS d
     LEFT JOIN dbo.SVCDOC AS f ON f.FILEGUID = d.DOKUMENTFILEGUID WHERE d.ERP_STREDISKO IS NOT NULL`,
  `CREATE VIEW dbo.ERP_PREHLED AS SELECT s.NAZEV, COUNT(*) AS POCET FROM dbo.SUBJECT AS s GROUP BY s.NAZEV`,
  `CREATE PROCEDURE dbo.ERP_ZAPIS @Udalost nvarchar(100) AS
     BEGIN SET NOCOUNT ON; INSERT INTO dbo.ERP_AUDIT (ID, UDALOST) SELECT ISNULL(MAX(ID), 0) + 1, @Udalost FROM dbo.ERP_AUDIT; END`,
  `INSERT INTO dbo.SUBJECT VALUES (1, N'Žluťoučký kůň s.r.o.', N'12345678', NULL, NULL, N'A'),
     (2, N'Beta a.s.', NULL, N'https://example.invalid/hook', N'whsec_x', NULL)`,
  `INSERT INTO dbo.SVCDOC VALUES ('11111111-2222-3333-4444-555555555555', N'faktura.xml', N'application/xml', 3, 0x3C613E, 1)`,
  `INSERT INTO dbo.DOKUMENT VALUES (10, N'FV-1', 1, '11111111-2222-3333-4444-555555555555', N'S1'), (11, N'FV-2', 2, NULL, NULL)`,
  `INSERT INTO dbo.WS_APPLICATION VALUES (7, N'ERP app', N'erp-key', N'erp-hash', 1, N'vlastní')`,
  `INSERT INTO dbo.ERP_AUDIT VALUES (1, N'založeno')`,
];
const ERP_TABLES = ['SUBJECT', 'DOKUMENT', 'SVCDOC', 'WS_APPLICATION', 'ERP_AUDIT'];
const ERP_MODULES = ['V_DOKUMENT_SOUBOR', 'ERP_PREHLED', 'ERP_ZAPIS'];
const ERP_OWN = [...ERP_TABLES, ...ERP_MODULES];

const digest = (value: unknown) =>
  createHash('sha256')
    .update(JSON.stringify(value, (_key, v) => (Buffer.isBuffer(v) ? v.toString('hex') : v)))
    .digest('hex');

/** Everything of the ERP's objects the catalogue and the rows say, to compare before and after. */
async function erpSnapshot(db: Database) {
  const list = ERP_OWN.map((name) => `'${name.toLowerCase()}'`).join(', ');
  const columns = await db.query(
    `SELECT TABLE_NAME AS t, COLUMN_NAME AS c, DATA_TYPE AS type, CHARACTER_MAXIMUM_LENGTH AS len,
        IS_NULLABLE AS nullable, COLUMN_DEFAULT AS dflt, ORDINAL_POSITION AS pos
       FROM INFORMATION_SCHEMA.COLUMNS WHERE LOWER(TABLE_NAME) IN (${list}) ORDER BY TABLE_NAME, ORDINAL_POSITION`,
  );
  const definitions = await db.query(
    `SELECT o.name AS name, o.type AS type, m.definition AS definition FROM sys.objects AS o
       JOIN sys.sql_modules AS m ON m.object_id = o.object_id WHERE LOWER(o.name) IN (${list}) ORDER BY o.name`,
  );
  // Triggers, constraints, indexes and foreign keys on (or pointing at) an ERP table: none may be added.
  const attached = await db.query(
    `SELECT o.name AS name, o.type AS type, p.name AS parent FROM sys.objects AS o
       JOIN sys.objects AS p ON p.object_id = o.parent_object_id
      WHERE LOWER(p.name) IN (${list}) ORDER BY p.name, o.type, o.name`,
  );
  const foreignKeys = await db.query(
    `SELECT f.name AS name FROM sys.foreign_keys AS f JOIN sys.objects AS r ON r.object_id = f.referenced_object_id
      WHERE LOWER(r.name) IN (${list}) ORDER BY f.name`,
  );
  const indexes = await db.query(
    `SELECT o.name AS t, i.index_id AS id, i.type AS type FROM sys.indexes AS i JOIN sys.objects AS o ON o.object_id = i.object_id
      WHERE LOWER(o.name) IN (${list}) ORDER BY o.name, i.index_id`,
  );
  const rows: Record<string, string> = {};
  for (const table of ERP_TABLES)
    rows[table] = digest(await db.query(`SELECT * FROM dbo.${table} ORDER BY 1`));
  return { columns, definitions, attached, foreignKeys, indexes, rows, rowCounts: await counts(db) };
}

async function counts(db: Database) {
  const out: Record<string, number> = {};
  for (const table of ERP_TABLES) {
    out[table] = Number((await db.query(`SELECT COUNT(*) AS n FROM dbo.${table}`))[0]!.n);
  }
  return out;
}

/** Every object of the database, by type and name: what a run that must write nothing may not change. */
const allObjects = async (db: Database) =>
  (
    await db.query(
      `SELECT o.type AS type, o.name AS name FROM sys.objects AS o JOIN sys.schemas AS s ON s.schema_id = o.schema_id
        WHERE s.name = 'dbo' ORDER BY o.type, o.name`,
    )
  ).map((row) => `${String(row.type).trim()} ${String(row.name).toLowerCase()}`);

// The real-ERP-layout test (issue: db:apply on an ERP's database): db:apply creates and changes
// only what the service owns. The whole e2e suite on T-SQL runs on a database laid out the same
// way (infra/local/erp-stand-in.sql, infra/local/tsql-engine.ts createDemoDatabase).
describe.skipIf(!url)("npm run db:apply on a database laid out as an ERP's", () => {
  const name = `svc_erp_${randomBytes(4).toString('hex')}`;
  const broken = `svc_erpx_${randomBytes(4).toString('hex')}`;
  let server: Database;
  let target: string;
  let erp: Database;

  beforeAll(async () => {
    server = createMssqlDatabase({ connectionString: url! });
    await server.query(`CREATE DATABASE ${name}`);
    await server.query(`CREATE DATABASE ${broken}`);
    target = withDatabase(url!, name);
    erp = createMssqlDatabase({ connectionString: target });
    for (const statement of ERP_LAYOUT) await erp.query(statement);
  }, 120_000);
  afterAll(async () => {
    await erp?.close();
    for (const db of [name, broken])
      await server?.query(`DROP DATABASE IF EXISTS ${db}`).catch(() => undefined);
    await server?.close();
  });

  it('--plan prints every statement it would run and writes nothing', async () => {
    const before = await allObjects(erp);
    const planned = await dbApply(
      target,
      '--plan',
      '--schema',
      '--change-feed',
      'SUBJECT',
      '--role',
      'svc_plan_role',
    );
    expect(planned.code ?? 0, planned.stderr).toBe(0);
    expect(planned.stdout).toContain('-- infra/sql/mssql/service/030-web-api.sql');
    expect(planned.stdout).toContain('CREATE TABLE dbo.WS_JOURNAL');
    expect(planned.stdout).toContain("EXEC dbo.SVC_CHANGE_FEED_ENABLE N'dbo', N'SUBJECT';");
    expect(planned.stdout).toContain('CREATE ROLE [svc_plan_role];');
    expect(planned.stdout).toContain('GRANT SELECT, INSERT ON [dbo].[SVCDOC] TO [svc_plan_role];');
    // Nothing of the demo is planned on a tenant's database.
    expect(planned.stdout).not.toMatch(
      /-- infra\/sql\/mssql\/demo\/|PROCEDURE dbo\.DEMO_|CREATE VIEW|INSERT INTO dbo\.WS_OPERATION/,
    );
    expect(await allObjects(erp)).toEqual(before);
    const principals = await erp.query(
      `SELECT COUNT(*) AS n FROM sys.database_principals WHERE name = 'svc_plan_role'`,
    );
    expect(Number(principals[0]!.n)).toBe(0);
  }, 300_000);

  it("adds the service's objects and leaves every ERP object's definition and rows as they were, twice", async () => {
    const before = await erpSnapshot(erp);
    for (const round of [1, 2]) {
      const applied = await dbApply(target);
      expect(applied.code ?? 0, `round ${round}: ${applied.stderr}`).toBe(0);
      expect(applied.stdout).toMatch(
        /^applied service\/030-web-api\.sql, service\/040-webhook\.sql, service\/050-change-feed\.sql, service\/080-change-notifications\.sql in/m,
      );
      expect(await erpSnapshot(erp)).toEqual(before);
    }
    const objects = await allObjects(erp);
    for (const own of [
      'ws_journal',
      'ws_operation',
      'ws_replay_guard',
      'webhook_delivery',
      'webhook_endpoint',
      'svc_change_feed',
    ]) {
      expect(objects).toContain(`U ${own}`);
    }
    expect(objects).toContain('P svc_change_feed_enable');
    // Nothing of the demo: no demo table, procedure or operation, no recording turned on.
    expect(objects.filter((object) => /ucet|demo_|ws_op_|ws_wait|svc_changes_/.test(object))).toEqual([]);
    expect((await erp.query('SELECT COUNT(*) AS n FROM dbo.WS_OPERATION'))[0]).toEqual({ n: 0 });
    expect((await erp.query('SELECT COUNT(*) AS n FROM dbo.SVC_CHANGE_FEED'))[0]).toEqual({ n: 0 });
  }, 600_000);

  it('--demo on it adds the demo where missing and still changes no ERP object or row', async () => {
    const before = await erpSnapshot(erp);
    const applied = await dbApply(target, '--demo');
    expect(applied.code ?? 0, applied.stderr).toBe(0);
    // The demo records SUBJECT and DOKUMENT: the change feed's triggers (the service's) are the only addition.
    const after = await erpSnapshot(erp);
    const feedTriggers = after.attached.filter((row) => /^svc_changes_\w+_trg$/i.test(String(row.name)));
    expect(feedTriggers.map((row) => String(row.name).toLowerCase()).sort()).toEqual([
      'svc_changes_dokument_trg',
      'svc_changes_subject_trg',
    ]);
    expect({ ...after, attached: after.attached.filter((row) => !feedTriggers.includes(row)) }).toEqual(
      before,
    );
    // The demo's own objects came where missing (UCET, the demo procedures and operations).
    expect(await allObjects(erp)).toEqual(
      expect.arrayContaining(['U ucet', 'P demo_file_received', 'P ws_op_sleep']),
    );
  }, 600_000);

  it('--change-feed alone only turns recording on; --role alone only makes the role', async () => {
    const before = await allObjects(erp);
    const feed = await dbApply(target, '--change-feed', 'ERP_AUDIT');
    expect(feed.code ?? 0, feed.stderr).toBe(0);
    expect(feed.stdout).not.toMatch(/^applied /m);
    const added = (await allObjects(erp)).filter(
      (object) => !before.includes(object) && /^(U|TR|P|V) /.test(object),
    );
    expect(added.sort()).toEqual(['TR svc_changes_erp_audit_trg', 'U svc_changes_erp_audit'].sort());
    const role = await dbApply(
      target,
      '--role',
      `svc_erp_role_${randomBytes(2).toString('hex')}`,
      '--read',
      'SUBJECT',
    );
    expect(role.code ?? 0, role.stderr).toBe(0);
    expect(role.stdout).not.toMatch(/^applied /m);
    expect(role.stdout).toMatch(/role svc_erp_role_\w+: SELECT on dbo\.SUBJECT/);
  }, 600_000);

  it('stops naming each missing or different column, having written nothing', async () => {
    const db = createMssqlDatabase({ connectionString: withDatabase(url!, broken) });
    try {
      for (const statement of ERP_LAYOUT) {
        await db.query(
          statement
            .replace('FILENAME nvarchar(260) NOT NULL,', '')
            .replace("N'faktura.xml', ", '')
            .replace('f.FILENAME', 'f.CONTENT_TYPE')
            .replace('SECRET_WEBHOOK nvarchar(200) NULL', 'SECRET_WEBHOOK int NULL')
            .replace("N'whsec_x'", '1'),
        );
      }
      const before = await allObjects(db);
      const stopped = await dbApply(withDatabase(url!, broken));
      expect(stopped.code).toBe(1);
      expect(stopped.stderr).toContain('nothing was written');
      expect(stopped.stderr).toContain('dbo.SVCDOC.FILENAME: column is missing');
      expect(stopped.stderr).toContain('dbo.SUBJECT.SECRET_WEBHOOK: is int');
      expect(await allObjects(db)).toEqual(before);
    } finally {
      await db.close();
    }
  }, 300_000);

  it('refuses public, fixed roles and system principals as role or login, and an empty role', async () => {
    for (const reserved of [
      'public',
      'db_owner',
      'DB_DATAREADER',
      'guest',
      'dbo',
      'sys',
      'INFORMATION_SCHEMA',
    ]) {
      const refused = await dbApply(target, '--role', reserved);
      expect(refused.code, reserved).toBe(2);
      expect(refused.stderr).toMatch(new RegExp(`--role ${reserved} is refused: `));
    }
    const login = await dbApply(target, '--role', 'svc_ok_role', '--login', 'db_owner');
    expect(login).toMatchObject({ code: 2, stderr: expect.stringContaining('--login db_owner is refused') });
    expect(await dbApply(target, '--role', '')).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--role takes the name'),
    });
  }, 300_000);
});
