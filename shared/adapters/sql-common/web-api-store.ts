/**
 * The Web API store over a database connection, shared by the SQL adapters: `WS_OPERATION`,
 * `WS_JOURNAL` and `WS_REPLAY_GUARD` (infra/sql/*\/030-web-api.sql), and the ERP's register of
 * applications `WS_APPLICATION` for a tenant that names it instead of listing its applications in
 * the registry (read only; shared/lambda/web-api/store.ts chooses). Times come
 * from the database's clock, so that every Lambda agrees on them. No SQL text of either dialect
 * lives here; each adapter passes its statements.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { type Database, DatabaseStatementError, type Row } from '../../core/database.js';
import { parseQualifiedName } from '../../core/sql-names.js';
import type { ParamObject } from '../../core/web-api/envelope.js';
import {
  type Application,
  type JournalEntry,
  type JournalState,
  type Operation,
  OperationFailedError,
  type WebApiStore,
} from '../../core/web-api/store.js';

/** A dialect's statements of the Web API store; the parameters of each are those its method passes. */
export interface WebApiStatements {
  /** Parameter: the API key. Columns `id`, `apiKey`, `apiHash`, `active` of the ERP's register. */
  readonly findApplication: string;
  /** Parameters: application, request digest, hold seconds. One row `accepted` = 1 for the first caller only, atomically. */
  readonly claimRequest: string;
  /** Deletes expired replay rows. */
  readonly sweepReplayGuard: string;
  /** Parameter: vltyp. Columns `vltyp`, `procedure`, `rowName` of an active operation. */
  readonly findOperation: string;
  /**
   * Parameters: application, vltyp, mode, request, request id, tenant, trace id. One row `id`; the
   * row of SVC_JOURNAL saying whose call it is, and in which trace, written with it.
   */
  readonly openJournal: string;
  /**
   * `claimRequest` and, when accepted, `openJournal` in one statement (or batch). Parameters:
   * application, request digest, hold seconds, vltyp, mode, request, request id, tenant, trace id. One row
   * `id` when the claim was accepted, none when it was refused.
   */
  readonly claimAndOpenJournal: string;
  /** Parameters: id, state, answer, vl result, row name. A row `id` when it was running. */
  readonly finishJournal: string;
  /** Parameters: id, state, answer, vlResult, rowName, attempt. `finishJournal` while ATTEMPTS = attempt. */
  readonly finishAttempt: string;
  /**
   * Parameters: id, tenant. The journal columns, `ageSeconds` and `leaseHeld` (1 or true while a
   * lease runs), of the tenant's call (or of a row from before SVC_JOURNAL, which names none).
   */
  readonly readJournal: string;
  /**
   * Parameters: id, lease seconds, max attempts. The journal columns and `ageSeconds` when the
   * attempt started (the job running, not leased, with fewer attempts than the maximum).
   */
  readonly startAttempt: string;
  /** Parameters: id, attempt. */
  readonly releaseJob: string;
  /** Calls the operation's procedure with parameter 1, the params as JSON. */
  callOperation(operation: Operation): string;
  /**
   * In the service's transaction: the statements that set the save point the operation's failure
   * goes back to, run before {@link callInTransaction} (none where that call sets it itself).
   */
  readonly savepoint?: string;
  /** In the service's transaction: calls the operation's procedure (parameter 1) behind a save point. */
  callInTransaction(operation: Operation): string;
  /**
   * In the service's transaction, after the operation failed: back to its save point. The
   * transaction can go on unless this fails or answers a row `usable` = 0 (the failure doomed it).
   */
  readonly backToSavepoint: string;
  /** Whether a failed call ended the service's transaction itself (a ROLLBACK or COMMIT of the procedure's own). */
  endedTransaction(error: DatabaseStatementError): boolean;
  /** Whether a failed statement carries a message the procedure raised on purpose (safe to show the caller). */
  raisedByProcedure(error: DatabaseStatementError): boolean;
}

/** Expired replay rows are swept on every this many claims of a process. */
const SWEEP_EVERY = 100;

/** Splits and checks `schema.NAME`: names come from a trusted table, but still never reach SQL unchecked. */
export function procedureReference(quoteIdent: (name: string) => string, procedure: string): string {
  const parsed = parseQualifiedName(procedure.trim());
  if (!parsed) {
    throw new Error(`WS_OPERATION.PROCEDURE_NAME "${procedure.slice(0, 140)}" is not NAME or schema.NAME`);
  }
  return `${quoteIdent(parsed.schema ?? 'dbo')}.${quoteIdent(parsed.name)}`;
}

function sameKey(a: string, b: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
  return timingSafeEqual(digest(a), digest(b));
}

function toJournalEntry(row: Row): JournalEntry {
  return {
    id: Number(row.id),
    applicationId: Number(row.applicationId),
    vltyp: Number(row.vltyp),
    state: String(row.state) as JournalState,
    request: String(row.request),
    answer: row.answer === null || row.answer === undefined ? undefined : String(row.answer),
    rowName: row.rowName === null || row.rowName === undefined ? undefined : String(row.rowName),
    attempts: Number(row.attempts),
    leaseHeld: row.leaseHeld === true || Number(row.leaseHeld) === 1,
    ageSeconds: Number(row.ageSeconds),
  };
}

let claims = 0;

/** The Web API store on a tenant database, in the statements of its dialect. */
/**
 * The replay guard's digest of a tenant's request: tenants sharing a database (and maybe an
 * application id) never take each other's requests for replays.
 */
export const tenantDigest = (tenant: string, requestDigest: string) =>
  createHash('sha256').update(`${tenant}\n${requestDigest}`, 'utf8').digest('hex');

/**
 * A tenant's Web API store on its database, in the statements of its dialect: its journal ids
 * (997) and replay claims are its own, also where tenants share a database.
 */
export function createSqlWebApiStore(
  db: Pick<Database, 'query'> & Partial<Pick<Database, 'transaction'>>,
  sql: WebApiStatements,
  tenant: string,
  /** Bound to the service's transaction: operations run behind a save point. */
  inTransaction = false,
): WebApiStore {
  /** Deletes expired replay rows on every {@link SWEEP_EVERY}th accepted claim of the process. */
  async function sweepNow() {
    if (claims++ % SWEEP_EVERY !== 0) return;
    // Housekeeping only: a failed sweep must not fail the call.
    await db.query(sql.sweepReplayGuard).catch(() => undefined);
  }

  return {
    async findApplication(apiKey) {
      const row = (await db.query(sql.findApplication, [apiKey]))[0];
      // SQL Server compares case-insensitively; the key itself must match exactly.
      if (!row || !sameKey(String(row.apiKey), apiKey)) return undefined;
      return {
        id: Number(row.id),
        apiHashes: [String(row.apiHash)],
        active: Number(row.active) === 1,
      } satisfies Application;
    },

    async claimRequest(applicationId, requestDigest, holdSeconds) {
      const rows = await db.query(sql.claimRequest, [
        applicationId,
        tenantDigest(tenant, requestDigest),
        holdSeconds,
      ]);
      const accepted = rows.length > 0 && Number(rows[0]!.accepted) === 1;
      if (accepted) await sweepNow();
      return accepted;
    },

    async claimAndOpenJournal(claim, opening) {
      const rows = await db.query(sql.claimAndOpenJournal, [
        claim.applicationId,
        tenantDigest(tenant, claim.requestDigest),
        claim.holdSeconds,
        opening.vltyp,
        opening.mode,
        opening.request,
        opening.requestId.slice(0, 100),
        tenant,
        opening.traceId ?? null,
      ]);
      const id = rows[0]?.id;
      if (id === undefined || id === null) return undefined;
      await sweepNow();
      return Number(id);
    },

    async findOperation(vltyp) {
      const row = (await db.query(sql.findOperation, [vltyp]))[0];
      if (!row) return undefined;
      return { vltyp: Number(row.vltyp), procedure: String(row.procedure), rowName: String(row.rowName) };
    },

    async callOperation(operation: Operation, params: readonly ParamObject[], signal?: AbortSignal) {
      if (inTransaction && sql.savepoint) await db.query(sql.savepoint, [], { signal });
      const statement = inTransaction ? sql.callInTransaction(operation) : sql.callOperation(operation);
      try {
        return await db.query(statement, [JSON.stringify(params)], { signal });
      } catch (error) {
        if (!(error instanceof DatabaseStatementError)) throw error;
        // The procedure's writes go back to the save point; the journal's answer and the key's
        // record commit without them. A transaction the procedure ended, or its failure doomed,
        // cannot record anything any more.
        const ended =
          inTransaction &&
          (sql.endedTransaction(error) ||
            !(await db.query(sql.backToSavepoint).then(
              (rows) => rows[0]?.usable === undefined || Number(rows[0].usable) === 1,
              () => false,
            )));
        const own = sql.raisedByProcedure(error) ? error.message.slice(0, 1000) : undefined;
        throw new OperationFailedError(`Operation ${operation.vltyp} failed: ${error.message}`, own, {
          cause: error,
          endedTransaction: ended && sql.endedTransaction(error),
          transactionLost: ended,
        });
      }
    },

    async openJournal(opening) {
      const rows = await db.query(sql.openJournal, [
        opening.applicationId,
        opening.vltyp,
        opening.mode,
        opening.request,
        opening.requestId.slice(0, 100),
        tenant,
        opening.traceId ?? null,
      ]);
      return Number(rows[0]!.id);
    },

    async finishJournal(id, outcome) {
      const rows = await db.query(sql.finishJournal, [
        id,
        outcome.state,
        outcome.answer,
        outcome.vlResult,
        outcome.rowName ?? null,
      ]);
      return rows.length > 0;
    },

    async finishAttempt(id, attempt, outcome) {
      const rows = await db.query(sql.finishAttempt, [
        id,
        outcome.state,
        outcome.answer,
        outcome.vlResult,
        outcome.rowName ?? null,
        attempt,
      ]);
      return rows.length > 0;
    },

    async readJournal(id) {
      const row = (await db.query(sql.readJournal, [id, tenant]))[0];
      return row ? toJournalEntry(row) : undefined;
    },

    async startAttempt(id, leaseSeconds, maxAttempts) {
      const row = (await db.query(sql.startAttempt, [id, leaseSeconds, maxAttempts]))[0];
      // The attempt has just taken the lease.
      return row ? { ...toJournalEntry(row), leaseHeld: true } : undefined;
    },

    async releaseJob(id, attempt) {
      await db.query(sql.releaseJob, [id, attempt]);
    },

    within: (tx) => createSqlWebApiStore(tx as Pick<Database, 'query'>, sql, tenant, true),

    transaction(effects) {
      if (!db.transaction) throw new Error('This Web API store is in a transaction already');
      return db.transaction((tx) => effects(createSqlWebApiStore(tx, sql, tenant, true)));
    },
  };
}
