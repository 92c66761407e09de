/**
 * What `npm run db:apply` does to a tenant's database (CONTRACT.md section 7), each part only when
 * asked: the service's scripts (after a check of the ERP's objects that writes nothing), recording
 * of the change feed for named tables, and the service's role. With `plan`, every statement is
 * printed in order and nothing is written (the catalogue is still read, to check and to plan).
 * A run holds the database's application lock throughout, so that two at once take turns.
 */
import { checkErpObjects, describeProblem } from '../../shared/adapters/mssql/erp-objects.js';
import { ERP_APPLICATIONS_GRANT } from '../../shared/adapters/mssql/service-grants.js';
import { applyServiceRole, type ServiceRoleRequest } from '../../shared/adapters/mssql/service-role.js';
import type { Database } from '../../shared/core/database.js';
import { changeFeedNameProblem, type QualifiedName } from '../../shared/core/sql-names.js';
import { mssqlScriptFiles, scriptBatches } from './mssql-scripts.js';

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
  /**
   * A tenant on this database reads its Web API applications from the ERP's register
   * (`webApi.applications.erpTable`): its layout is checked, and the role may read it.
   */
  readonly erpApplications?: boolean;
  /** How long to wait for another run on the same database to finish (seconds; default {@link APPLY_LOCK_WAIT_SECONDS}). */
  readonly waitSeconds?: number;
}

/** A refusal before anything was written: the message says what and why. */
export class TenantDatabaseError extends Error {
  override readonly name = 'TenantDatabaseError';
}

const literal = (value: string) => `N'${value.replaceAll("'", "''")}'`;

/**
 * The application lock of a run (`sp_getapplock`, owned by the session that holds it), one per
 * database: its name and the database's.
 */
export const APPLY_LOCK = 'erp-integration-gateway db:apply';
const LOCK_RESOURCE = `DECLARE @resource nvarchar(255) = N'${APPLY_LOCK} ' + DB_NAME();`;
/** Parameter: how long to wait (ms). One row `result`: 0 or 1 granted, -1 not within the time. */
export const TAKE_APPLY_LOCK = `${LOCK_RESOURCE}
  DECLARE @result int;
  EXEC @result = sp_getapplock @Resource = @resource, @LockMode = 'Exclusive', @LockOwner = 'Session', @LockTimeout = @p1;
  SELECT @result AS result;`;
export const RELEASE_APPLY_LOCK = `${LOCK_RESOURCE}
  EXEC sp_releaseapplock @Resource = @resource, @LockOwner = 'Session';`;
/** How long a run waits for another on the same database, unless told (`--wait`). */
export const APPLY_LOCK_WAIT_SECONDS = 600;
/** Each wait is a statement of its own, well within any request time-out, and the run can say it waits. */
const LOCK_POLL_MS = 5000;

/**
 * Takes the run's lock on `session`, waiting up to `waitSeconds` for another run to finish (and
 * saying so once); a TenantDatabaseError when it did not.
 */
async function takeApplyLock(
  session: Pick<Database, 'query'>,
  waitSeconds: number,
  print: (line: string) => void,
): Promise<void> {
  const deadline = Date.now() + waitSeconds * 1000;
  let told = false;
  for (;;) {
    // At least 1 ms: with 0, the T-SQL engine answers a held lock with -999 instead of -1.
    const wait = Math.max(1, Math.min(LOCK_POLL_MS, deadline - Date.now()));
    const [row] = await session.query(TAKE_APPLY_LOCK, [wait]);
    const result = Number(row?.result);
    if (result >= 0) return;
    if (result !== -1 && result !== -999) {
      throw new TenantDatabaseError(
        `could not take the database's application lock "${APPLY_LOCK}" (sp_getapplock answered ${result}); nothing was written`,
      );
    }
    if (!told) {
      print(`waiting for another db:apply on this database to finish (up to ${waitSeconds} s)…`);
      told = true;
    }
    if (Date.now() >= deadline) {
      throw new TenantDatabaseError(
        `another db:apply is running on this database (it holds the application lock "${APPLY_LOCK}"), ` +
          `and it did not finish within ${waitSeconds} s; nothing was written: run it again once the other has ` +
          'finished, or give --wait SECONDS to wait longer',
      );
    }
  }
}

/**
 * Runs (or plans) the parts asked for; `print` gets what a DBA reads, never a password. Two runs
 * on one database at once take turns: each holds the database's application lock for the whole
 * run (on a connection of its own, in a transaction that writes nothing), and the second waits,
 * up to `waitSeconds`. Without it their scripts met halfway, and one stopped with the engine's
 * own words (the T-SQL engine's `duplicate key value violates unique constraint`, `tuple
 * concurrently deleted`).
 */
export async function applyToTenantDatabase(
  db: Database,
  request: TenantDatabaseRequest,
  print: (line: string) => void,
): Promise<void> {
  await db.transaction(async (session) => {
    await takeApplyLock(session, request.waitSeconds ?? APPLY_LOCK_WAIT_SECONDS, print);
    try {
      await applyParts(db, request, print);
    } finally {
      // The session's lock would outlive the transaction; the connection goes back to the pool.
      await session.query(RELEASE_APPLY_LOCK).catch(() => undefined);
    }
  });
}

async function applyParts(
  db: Database,
  request: TenantDatabaseRequest,
  print: (line: string) => void,
): Promise<void> {
  const { plan } = request;
  if (plan) print('-- npm run db:apply --plan: the statements it would run, in order; nothing was changed.');

  // Names the change feed would derive past the identifier limit: refused before anything.
  for (const name of request.changeFeed) {
    const problem = changeFeedNameProblem(name.name, 'mssql');
    if (problem) throw new TenantDatabaseError(`--change-feed: ${problem}; nothing was written`);
  }

  const files = request.scripts ? mssqlScriptFiles({ demo: request.demo }) : [];
  if (request.scripts || request.erpApplications) {
    // Before anything is written: what the service needs of the ERP's objects (without the
    // scripts, of the ERP's register alone: the role reads it).
    const { problems } = await checkErpObjects(db, {
      demo: request.demo,
      documentsElsewhere: request.documentsElsewhere === true,
      erpApplications: request.erpApplications === true,
      ...(request.scripts ? {} : { only: [ERP_APPLICATIONS_GRANT.object] }),
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
