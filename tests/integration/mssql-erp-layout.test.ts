import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as getData } from '../../functions/web-api/getData.js';
import { handler as webTest } from '../../functions/web-api/test.js';
import { withDatabase, withLogin } from '../../infra/local/tsql-engine.js';
import { createMssqlDatabase } from '../../shared/adapters/mssql/index.js';
import { registerWebApiOperation } from '../../shared/adapters/mssql/web-api-registration.js';
import { openDatabase } from '../../shared/config/databases.js';
import { setTenantRegistry } from '../../shared/config/tenant-registry.js';
import { type DatabaseConnection, parseTenantRegistry } from '../../shared/config/tenants.js';
import type { Database } from '../../shared/core/database.js';
import { ERP_APPLICATION_REGISTER, ERP_OPERATION_PROCEDURE, REAL_ERP_LAYOUT } from '../support/erp-layout.js';
import { httpApiEvent, invokeHttp } from '../support/http-api-event.js';
import { mssqlUrl as url } from '../support/mssql.js';
import { envelope, type SignOptions } from '../support/web-api.js';
import { signedWebApiEvent } from '../support/web-api-event.js';

const run = promisify(execFile);
type Outcome = { code?: number; stdout: string; stderr: string };
const dbApply = (connectionString: string, ...more: string[]): Promise<Outcome> =>
  run('npx', ['tsx', 'infra/tools/db-apply.ts', connectionString, ...more], { timeout: 240_000 }).catch(
    (error: Outcome) => error,
  );
/** db:apply with a new login's password, as a DBA runs `--role … --login …`. */
const dbApplyWithPassword = (
  password: string,
  connectionString: string,
  ...more: string[]
): Promise<Outcome> =>
  run('npx', ['tsx', 'infra/tools/db-apply.ts', connectionString, ...more], {
    timeout: 240_000,
    env: { ...process.env, DB_LOGIN_PASSWORD: password },
  }).catch((error: Outcome) => error);

const HASH = 'scrypt$16384$8$1$ZGVtby10ZW5hbnQtc2FsdA==$x2bp48ourmNi7AJz+st/kNLkTjPJ/XnX7NIpiDrZ8ig=';
/** A tenant of the Web API on `connection`: the registry's applications, or the ERP's register. */
const webApiTenant = (connection: DatabaseConnection, applications: unknown) => ({
  database: connection,
  dataApiUsers: [{ name: 'demo', passwordHash: HASH }],
  dataSources: ['SUBJECT'],
  webApi: { applications },
});
const keyTest = async (tenant: string, apiKey: string) => {
  const result = await invokeHttp(
    webTest,
    httpApiEvent({
      method: 'GET',
      route: '/{tenant}/WebAPI/test',
      pathParameters: { tenant },
      headers: { 'x-api-key': apiKey },
    }),
  );
  return { status: result.statusCode, body: JSON.parse(String(result.body)) };
};
const signed = async (body: string, options: SignOptions & { tenant: string }) => {
  const result = await invokeHttp(getData, signedWebApiEvent('getData', body, options));
  return { status: result.statusCode, body: JSON.parse(String(result.body)) };
};
const errorOf = (answer: { body: { data: { error: { errorCode: string; errorMessage: string }[] }[] } }) =>
  answer.body.data[0]!.error[0]!;

/** The ERP's database with its own register of Web API applications (a tenant may name it instead). */
const ERP_LAYOUT = [...REAL_ERP_LAYOUT, ...ERP_APPLICATION_REGISTER];
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
    // Exactly once's keys (CONTRACT 5a): the table, its index and its grant.
    expect(planned.stdout).toContain('-- infra/sql/mssql/service/090-idempotency.sql');
    expect(planned.stdout).toContain('CREATE TABLE dbo.SVC_IDEMPOTENCY');
    expect(planned.stdout).toContain('CREATE NONCLUSTERED INDEX IX_SVC_IDEMPOTENCY_EXPIRES');
    expect(planned.stdout).toContain(
      'GRANT SELECT, INSERT, DELETE ON [dbo].[SVC_IDEMPOTENCY] TO [svc_plan_role];',
    );
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
        /^applied service\/030-web-api\.sql, service\/040-webhook\.sql, service\/050-change-feed\.sql, service\/080-change-notifications\.sql, service\/090-idempotency\.sql in/m,
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
      'svc_idempotency',
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

  it("with --erp-applications: checks the ERP's register, --role grants SELECT on it, and the Web API reads it (only then)", async () => {
    const before = await erpSnapshot(erp);
    const applied = await dbApply(target, '--erp-applications');
    expect(applied.code ?? 0, applied.stderr).toBe(0);
    const suffix = randomBytes(3).toString('hex');
    const password = `Pw-${randomBytes(12).toString('hex')}`;
    const granted = await dbApplyWithPassword(
      password,
      target,
      '--role',
      `svc_reg_role_${suffix}`,
      '--erp-applications',
      '--login',
      `svc_reg_login_${suffix}`,
    );
    expect(granted.code ?? 0, granted.stderr).toBe(0);
    expect(granted.stdout).toMatch(/: SELECT on dbo\.WS_APPLICATION$/m);
    const without = await dbApplyWithPassword(
      password,
      target,
      '--role',
      `svc_plain_role_${suffix}`,
      '--login',
      `svc_plain_login_${suffix}`,
    );
    expect(without.code ?? 0, without.stderr).toBe(0);
    expect(without.stdout).not.toMatch(/WS_APPLICATION/i);
    const connections = {
      register: { kind: 'mssql', connectionString: withLogin(target, `svc_reg_login_${suffix}`, password) },
      plain: { kind: 'mssql', connectionString: withLogin(target, `svc_plain_login_${suffix}`, password) },
    } as const;
    setTenantRegistry(
      parseTenantRegistry({
        tenants: {
          register: webApiTenant(connections.register, { erpTable: 'dbo.WS_APPLICATION' }),
          plain: webApiTenant(connections.plain, { erpTable: 'dbo.WS_APPLICATION' }),
        },
      }),
    );
    try {
      expect((await keyTest('register', 'erp-key')).status).toBe(200);
      expect((await keyTest('register', 'ERP-KEY')).status).toBe(401);
      // A role without the extra grant: the documented answer, naming what to grant.
      const denied = await keyTest('plain', 'erp-key');
      expect(denied.status).toBe(500);
      expect(denied.body.data[0].error[0]).toEqual({
        errorCode: '180',
        errorMessage: `The service's database login may not use dbo.WS_APPLICATION: grant SELECT on dbo.WS_APPLICATION to the service's role (docs/sql-server.md, "Permissions")`,
      });
    } finally {
      setTenantRegistry(undefined);
      for (const connection of Object.values(connections)) await (await openDatabase(connection)).close();
    }
    // Read, never written.
    expect(await erpSnapshot(erp)).toEqual(before);
  }, 600_000);

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

// A real ERP's database (issue 46): the seed's objects only, no register of Web API applications.
// db:apply needs nothing more, the role holds nothing on an applications table, and the Web API
// answers from the registry's applications, logging in with that role.
describe.skipIf(!url)("a real ERP's database, without any table of Web API applications", () => {
  const name = `svc_real_${randomBytes(4).toString('hex')}`;
  const role = `svc_real_role_${randomBytes(2).toString('hex')}`;
  const login = `svc_real_login_${randomBytes(2).toString('hex')}`;
  const password = `Pw-${randomBytes(12).toString('hex')}`;
  let server: Database;
  let target: string;
  let real: Database;
  let connection: DatabaseConnection;

  beforeAll(async () => {
    server = createMssqlDatabase({ connectionString: url! });
    await server.query(`CREATE DATABASE ${name}`);
    target = withDatabase(url!, name);
    real = createMssqlDatabase({ connectionString: target });
    for (const statement of [...REAL_ERP_LAYOUT, ERP_OPERATION_PROCEDURE]) await real.query(statement);
    connection = { kind: 'mssql', connectionString: withLogin(target, login, password) };
  }, 120_000);
  afterAll(async () => {
    setTenantRegistry(undefined);
    if (connection) await (await openDatabase(connection)).close();
    await real?.close();
    await server?.query(`DROP DATABASE IF EXISTS ${name}`).catch(() => undefined);
    await server?.close();
  });

  it('db:apply succeeds, creates no applications table, and --role grants nothing on one', async () => {
    const applied = await dbApply(target);
    expect(applied.code ?? 0, applied.stderr).toBe(0);
    expect(applied.stdout).toMatch(
      /^applied service\/030-web-api\.sql, .*service\/080-change-notifications\.sql, service\/090-idempotency\.sql in/m,
    );
    const objects = await allObjects(real);
    expect(objects).toContain('U ws_journal');
    expect(objects.filter((object) => /ws_application/.test(object))).toEqual([]);
    // Only the register option asks for one: then it stops, naming it, having written nothing.
    const asked = await dbApply(target, '--erp-applications');
    expect(asked.code).toBe(1);
    expect(asked.stderr).toContain('nothing was written');
    expect(asked.stderr).toContain('dbo.WS_APPLICATION: table is missing');
    expect(await allObjects(real)).toEqual(objects);
    // The tenant's operation, then the role (EXECUTE on its procedure) and a login in it.
    await registerWebApiOperation(real, { vltyp: 1100, procedure: 'dbo.ERP_PARTNERI', rowName: 'Partner' });
    const granted = await dbApplyWithPassword(
      password,
      target,
      '--role',
      role,
      '--read',
      'SUBJECT',
      '--login',
      login,
    );
    expect(granted.code ?? 0, granted.stderr).toBe(0);
    expect(granted.stdout).toContain(`role ${role}: EXECUTE on dbo.ERP_PARTNERI`);
    expect(granted.stdout).not.toMatch(/WS_APPLICATION/i);
  }, 600_000);

  it("the Web API answers from the registry's applications (rotation, 997 of another application 404/111), logging in with that role", async () => {
    setTenantRegistry(
      parseTenantRegistry({
        tenants: {
          erp: webApiTenant(connection, [
            { id: 5, apiKey: 'real-erp-key-5', apiHashes: ['real-hash-new', 'real-hash-old'] },
            { id: 6, apiKey: 'real-erp-key-6', apiHashes: ['real-hash-six'] },
          ]),
        },
      }),
    );
    expect((await keyTest('erp', 'real-erp-key-5')).status).toBe(200);
    expect((await keyTest('erp', 'erp-key')).status).toBe(401);
    const five = { tenant: 'erp', apiKey: 'real-erp-key-5' };
    const answer = await signed(envelope(1100, [{ ico: '12345678' }]), { ...five, apiHash: 'real-hash-old' });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      id: expect.any(Number),
      vlResult: 1,
      data: [{ id: 1, nazev: 'Žluťoučký kůň s.r.o.' }],
    });
    const [row] = await real.query(
      'SELECT APPLICATION_ID AS applicationId FROM dbo.WS_JOURNAL WHERE ID = @p1',
      [answer.body.id],
    );
    expect(row).toEqual({ applicationId: 5 });
    const asked = envelope(997, [{ idws_journal: answer.body.id }]);
    const foreign = await signed(asked, {
      tenant: 'erp',
      apiKey: 'real-erp-key-6',
      apiHash: 'real-hash-six',
    });
    expect([foreign.status, errorOf(foreign).errorCode]).toEqual([404, '111']);
    const own = await signed(asked, { ...five, apiHash: 'real-hash-new' });
    expect(own.status).toBe(200);
    expect(own.body.data).toEqual([{ resultForId: answer.body, id: answer.body.id }]);
    const wrong = await signed(envelope(1100), { ...five, apiHash: 'real-hash-six' });
    expect([wrong.status, errorOf(wrong).errorCode]).toEqual([401, '103']);
  }, 120_000);
});
