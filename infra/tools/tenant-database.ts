/**
 * What `npm run db:apply` does to a tenant's database (CONTRACT.md section 7), each part only when
 * asked: the service's scripts (after a check of the ERP's objects that writes nothing), recording
 * of the change feed for named tables, and the service's role. With `plan`, every statement is
 * printed in order and nothing is written (the catalogue is still read, to check and to plan).
 */
import { checkErpObjects, describeProblem } from '../../shared/adapters/mssql/erp-objects.js';
import { applyServiceRole, type ServiceRoleRequest } from '../../shared/adapters/mssql/service-role.js';
import type { Database } from '../../shared/core/database.js';
import type { QualifiedName } from '../../shared/core/sql-names.js';
import { mssqlScriptFiles, scriptBatches } from '../local/mssql-scripts.js';

export interface TenantDatabaseRequest {
  /** Run the scripts: the service's objects (and with `demo` the demo's around them). */
  readonly scripts: boolean;
  /** Lay out the demo ERP, its data, procedures and operations where missing. */
  readonly demo: boolean;
  /** Tables to record for the change feed. */
  readonly changeFeed: readonly QualifiedName[];
  /** The service's role (and login). */
  readonly role?: ServiceRoleRequest;
  /** Print, write nothing. */
  readonly plan: boolean;
  /** The documents (SVCDOC) live in a database of their own: not checked here. */
  readonly documentsElsewhere?: boolean;
}

/** A refusal before anything was written: the message says what and why. */
export class TenantDatabaseError extends Error {
  override readonly name = 'TenantDatabaseError';
}

const literal = (value: string) => `N'${value.replaceAll("'", "''")}'`;

/** Runs (or plans) the parts asked for; `print` gets what a DBA reads, never a password. */
export async function applyToTenantDatabase(
  db: Database,
  request: TenantDatabaseRequest,
  print: (line: string) => void,
): Promise<void> {
  const { plan } = request;
  if (plan) print('-- npm run db:apply --plan: the statements it would run, in order; nothing was changed.');

  const files = request.scripts ? mssqlScriptFiles({ demo: request.demo }) : [];
  if (request.scripts) {
    // Before anything is written: what the service needs of the ERP's objects.
    const { problems } = await checkErpObjects(db, {
      demo: request.demo,
      documentsElsewhere: request.documentsElsewhere === true,
    });
    if (problems.length > 0) {
      throw new TenantDatabaseError(
        [
          `the database lacks what the service needs of the ERP's objects; nothing was written:`,
          ...problems.map((problem) => `  ${describeProblem(problem)}`),
          request.demo
            ? ''
            : "  (db:apply never creates or alters the ERP's objects; --demo lays out a demo database where they are missing)",
        ]
          .filter(Boolean)
          .join('\n'),
      );
    }
  }
  const feedInstalled = async () =>
    Number(
      (
        await db.query(
          "SELECT COUNT(*) AS n FROM sys.procedures WHERE LOWER(name) = 'svc_change_feed_enable'",
        )
      )[0]?.n,
    ) > 0;
  if (request.changeFeed.length > 0) {
    if (!request.scripts && !(await feedInstalled())) {
      throw new TenantDatabaseError(
        "the change feed's objects are not in the database: run npm run db:apply first (without --change-feed) to create the service's objects",
      );
    }
    for (const name of request.changeFeed) {
      const [row] = await db.query(
        `SELECT COUNT(*) AS n FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_TYPE = 'BASE TABLE'
          AND LOWER(TABLE_SCHEMA) = LOWER(@p1) AND LOWER(TABLE_NAME) = LOWER(@p2)`,
        [name.schema ?? 'dbo', name.name],
      );
      if (Number(row?.n) === 0) {
        throw new TenantDatabaseError(
          `--change-feed: no such table ${name.schema ?? 'dbo'}.${name.name}; nothing was written`,
        );
      }
    }
  }

  const started = Date.now();
  for (const file of files) {
    if (plan) print(`\n-- infra/sql/mssql/${file}`);
    for (const batch of scriptBatches(file)) {
      if (plan) {
        print(batch);
        print('GO');
        continue;
      }
      await db.query(batch).catch((error: unknown) => {
        throw new Error(`infra/sql/mssql/${file} failed: ${(error as Error).message}`, { cause: error });
      });
    }
  }
  if (files.length > 0 && !plan) {
    print(`applied ${files.join(', ')} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }

  if (plan && request.changeFeed.length > 0) print('\n-- --change-feed');
  for (const name of request.changeFeed) {
    const schema = name.schema ?? 'dbo';
    if (plan) {
      print(`EXEC dbo.SVC_CHANGE_FEED_ENABLE ${literal(schema)}, ${literal(name.name)};`);
      continue;
    }
    // Names go as parameters; the procedure checks them against the catalogue.
    await db.query('EXEC dbo.SVC_CHANGE_FEED_ENABLE @p1, @p2', [schema, name.name]);
    print(`change feed: recording ${schema}.${name.name}`);
  }

  if (request.role) {
    const { given, statements } = await applyServiceRole(db, request.role, { plan });
    if (plan) {
      print(`\n-- --role ${request.role.role}`);
      for (const statement of statements) print(`${statement};`);
    } else {
      for (const grant of given)
        print(`role ${request.role.role}: ${grant.permissions.join(', ')} on ${grant.object}`);
      if (request.role.login)
        print(`login and user ${request.role.login.name}: member of ${request.role.role}`);
    }
  }
}
