/**
 * The database role of the service's login (CONTRACT.md section 7): created with exactly the
 * grants of service-grants.ts, on the objects the catalogue has, and on request a login and user
 * in it. Idempotent: what exists is left, a grant given twice is one grant. Names of objects come
 * from the catalogue (checked there, quoted with QUOTENAME's rule); values go as parameters; the
 * password, which a GRANT-like statement cannot take as a parameter, as a quoted literal.
 */
import type { Database } from '../../core/database.js';
import { parseQualifiedName, type QualifiedName } from '../../core/sql-names.js';
import { changeTableName } from '../sql-common/change-feed-store.js';
import { mssqlDialect } from './dialect.js';
import { ERP_APPLICATIONS_GRANT, type Permission, SERVICE_GRANTS } from './service-grants.js';

const q = mssqlDialect.quoteIdent;

/** A role, login or user name: a plain identifier, so that no quoting question arises in logs or scripts. */
export const PRINCIPAL_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/**
 * Principals every user of the database is, or that hold more than the service may: granting the
 * service's permissions to one of them would give them (the webhook secrets of WEBHOOK_ENDPOINT
 * among them) to every database user, or make the service's login more than its role.
 */
const RESERVED_PRINCIPALS = new Map<string, string>([
  ['public', 'every database user is a member of public'],
  ['guest', 'guest is every login without a user of its own'],
  ['dbo', "dbo is the database's owner"],
  ['sys', 'sys is the system schema and user'],
  ['information_schema', 'INFORMATION_SCHEMA is the system schema and user'],
  ['sa', 'sa is the server administrator'],
  ...[
    'db_owner',
    'db_accessadmin',
    'db_securityadmin',
    'db_ddladmin',
    'db_backupoperator',
    'db_datareader',
    'db_datawriter',
    'db_denydatareader',
    'db_denydatawriter',
  ].map((name) => [name, `${name} is a fixed database role`] as [string, string]),
  ...[
    'sysadmin',
    'serveradmin',
    'securityadmin',
    'processadmin',
    'setupadmin',
    'bulkadmin',
    'diskadmin',
    'dbcreator',
  ].map((name) => [name, `${name} is a fixed server role`] as [string, string]),
]);

/** Why `name` may not be the service's role or login; undefined when it may. */
export function reservedPrincipal(name: string): string | undefined {
  return RESERVED_PRINCIPALS.get(name.toLowerCase());
}

export interface ServiceRoleRequest {
  /** The role's name. */
  readonly role: string;
  /** Tables and views the tenant serves through the Data API (SELECT each). */
  readonly read: readonly string[];
  /** Procedures `setFile` may call (EXECUTE each). */
  readonly execute: readonly string[];
  /**
   * A tenant on this database reads its Web API applications from the ERP's register
   * (`--erp-applications`): SELECT on it too. Without it the role holds nothing there.
   */
  readonly erpApplications?: boolean;
  /** A login and a user of the same name, made a member of the role (when given). */
  readonly login?: { readonly name: string; readonly password: string };
}

/** One grant given, as `GRANT … ON … TO …` reads. */
export interface GivenGrant {
  readonly object: string;
  readonly permissions: readonly Permission[];
}

/** What the role part did (or, planned, would do). */
export interface ServiceRolePlan {
  readonly given: GivenGrant[];
  /** Every statement that writes, in order; the password never in it. */
  readonly statements: string[];
}

/** A request the catalogue or the rules refuse: its message names what is wrong. */
export class ServiceRoleError extends Error {
  override readonly name = 'ServiceRoleError';
}

const FIND_OBJECT = `SELECT TOP (1) s.name AS [schema], o.name AS [name], o.type AS [type]
  FROM sys.objects AS o JOIN sys.schemas AS s ON s.schema_id = o.schema_id
  WHERE LOWER(s.name) = LOWER(@p1) AND LOWER(o.name) = LOWER(@p2) AND o.type IN ('U', 'V', 'P')
  ORDER BY CASE WHEN s.name = @p1 AND o.name = @p2 THEN 0 ELSE 1 END`;

/**
 * The object's schema and name as the catalogue spells them; `kinds` the sys.objects types it may
 * be (U table, V view, P procedure). Undefined when it is not there.
 */
async function catalogued(
  db: Database,
  name: QualifiedName,
  kinds: readonly string[],
): Promise<{ schema: string; name: string } | undefined> {
  const [row] = await db.query(FIND_OBJECT, [name.schema ?? 'dbo', name.name]);
  if (!row || !kinds.includes(String(row.type).trim())) return undefined;
  // Babelfish answers names in lower case in sys.*; the name as written is kept when only case differs.
  const schema = String(row.schema);
  const found = String(row.name);
  return {
    schema: schema.toLowerCase() === (name.schema ?? 'dbo').toLowerCase() ? (name.schema ?? schema) : schema,
    name: found.toLowerCase() === name.name.toLowerCase() ? name.name : found,
  };
}

function parsed(text: string, what: string): QualifiedName {
  const name = parseQualifiedName(text.trim());
  if (!name) throw new ServiceRoleError(`${what} "${text}" is not a name (NAME or schema.NAME)`);
  return name;
}

const literal = (value: string) => `N'${value.replaceAll("'", "''")}'`;

/**
 * Creates (or completes) the role, its grants, and the login and user when asked. With `plan`, only
 * reads the catalogue and returns what it would write; the service's own tables that are not there
 * yet (the scripts of the same run create them first) are then named as the scripts create them.
 */
export async function applyServiceRole(
  db: Database,
  request: ServiceRoleRequest,
  options: { readonly plan?: boolean } = {},
): Promise<ServiceRolePlan> {
  for (const [what, name] of [
    ['role', request.role],
    ...(request.login ? [['login', request.login.name]] : []),
  ] as [string, string][]) {
    if (!PRINCIPAL_NAME.test(name)) {
      throw new ServiceRoleError(`${what} "${name}" must be a plain name (letters, digits, _)`);
    }
    const reserved = reservedPrincipal(name);
    if (reserved) {
      throw new ServiceRoleError(
        `${what} "${name}" is refused: ${reserved}, so the service's grants would go beyond its own login; name a role of its own`,
      );
    }
  }
  const plan = options.plan === true;
  const role = q(request.role);
  const given: GivenGrant[] = [];
  const statements: string[] = [];
  const write = async (statement: string, shown = statement) => {
    statements.push(shown);
    if (!plan) await db.query(statement);
  };
  const grant = async (object: { schema: string; name: string }, permissions: readonly Permission[]) => {
    const target = `${q(object.schema)}.${q(object.name)}`;
    await write(`GRANT ${permissions.join(', ')} ON ${target} TO ${role}`);
    given.push({ object: `${object.schema}.${object.name}`, permissions });
  };
  const tableExists = async (name: string) =>
    Number(
      (
        await db.query(
          'SELECT COUNT(*) AS n FROM INFORMATION_SCHEMA.TABLES WHERE LOWER(TABLE_SCHEMA) = LOWER(@p1) AND LOWER(TABLE_NAME) = LOWER(@p2)',
          ['dbo', name],
        )
      )[0]?.n,
    ) > 0;

  // Every name is checked before anything is created.
  const reads = [];
  for (const text of request.read) {
    const found = await catalogued(db, parsed(text, 'table or view'), ['U', 'V']);
    if (!found) throw new ServiceRoleError(`--read: no table or view "${text}" in the database`);
    reads.push(found);
  }
  const procedures = [];
  for (const text of request.execute) {
    const found = await catalogued(db, parsed(text, 'procedure'), ['P']);
    if (!found) throw new ServiceRoleError(`--execute: no procedure "${text}" in the database`);
    procedures.push(found);
  }
  const register = request.erpApplications
    ? await catalogued(db, parsed(ERP_APPLICATIONS_GRANT.object, 'table'), ['U'])
    : undefined;
  if (request.erpApplications && !register) {
    throw new ServiceRoleError(
      `--erp-applications: no table ${ERP_APPLICATIONS_GRANT.object} in the database (the ERP's register of Web API applications); without it, list the tenant's applications in the registry instead`,
    );
  }

  const [existing] = await db.query(
    `SELECT COUNT(*) AS n FROM sys.database_principals WHERE name = @p1 AND type = 'R'`,
    [request.role],
  );
  if (Number(existing?.n) === 0) await write(`CREATE ROLE ${role}`);

  // The service's own tables, one GRANT per object.
  const byObject = new Map<string, Permission[]>();
  for (const { object, permission } of SERVICE_GRANTS) {
    byObject.set(object, [...(byObject.get(object) ?? []), permission]);
  }
  for (const [object, permissions] of byObject) {
    const name = parsed(object, 'object');
    const found =
      (await catalogued(db, name, ['U'])) ??
      (plan ? { schema: name.schema ?? 'dbo', name: name.name } : undefined);
    if (!found) throw new ServiceRoleError(`${object} is not in the database: run the scripts first`);
    await grant(found, permissions);
  }
  if (register) await grant(register, [ERP_APPLICATIONS_GRANT.permission]);
  for (const found of reads) await grant(found, ['SELECT']);
  for (const found of procedures) await grant(found, ['EXECUTE']);
  // Every Web API operation's procedure, as WS_OPERATION names it.
  const operations = (await tableExists('WS_OPERATION'))
    ? await db.query('SELECT DISTINCT PROCEDURE_NAME AS name FROM dbo.WS_OPERATION')
    : [];
  for (const row of operations) {
    const name = parseQualifiedName(String(row.name));
    const found = name && (await catalogued(db, name, ['P']));
    if (!found)
      throw new ServiceRoleError(
        `dbo.WS_OPERATION names procedure "${row.name}", which is not in the database`,
      );
    await grant(found, ['EXECUTE']);
  }
  // The change table of every table the change feed records.
  const recorded = (await tableExists('SVC_CHANGE_FEED'))
    ? await db.query('SELECT SOURCE_SCHEMA AS [schema], SOURCE_NAME AS name FROM dbo.SVC_CHANGE_FEED')
    : [];
  for (const row of recorded) {
    const source = { schema: String(row.schema), name: String(row.name) };
    const found = await catalogued(db, { schema: source.schema, name: changeTableName(source) }, ['U']);
    if (found) await grant(found, ['SELECT', 'UPDATE', 'DELETE']);
  }

  if (request.login) {
    const name = request.login.name;
    const [login] = await db.query('SELECT COUNT(*) AS n FROM sys.server_principals WHERE name = @p1', [
      name,
    ]);
    if (Number(login?.n) === 0) {
      await write(
        `CREATE LOGIN ${q(name)} WITH PASSWORD = ${literal(request.login.password)}`,
        `CREATE LOGIN ${q(name)} WITH PASSWORD = N'<DB_LOGIN_PASSWORD>'`,
      );
    }
    const [user] = await db.query('SELECT COUNT(*) AS n FROM sys.database_principals WHERE name = @p1', [
      name,
    ]);
    if (Number(user?.n) === 0) await write(`CREATE USER ${q(name)} FOR LOGIN ${q(name)}`);
    const [member] = await db.query(
      `SELECT COUNT(*) AS n FROM sys.database_role_members AS m
        JOIN sys.database_principals AS r ON r.principal_id = m.role_principal_id
        JOIN sys.database_principals AS u ON u.principal_id = m.member_principal_id
        WHERE r.name = @p1 AND u.name = @p2`,
      [request.role, name],
    );
    if (Number(member?.n) === 0) await write(`ALTER ROLE ${role} ADD MEMBER ${q(name)}`);
  }
  return { given, statements };
}
