import type { Row } from '../database.js';
import type { Transaction } from '../idempotency.js';
import type { ParamObject } from './envelope.js';

/**
 * A Web API application: of the tenant registry (CONTRACT.md section 2), or of the ERP's own
 * register (`WS_APPLICATION`) where the tenant names it instead.
 */
export interface Application {
  /** What the journal records (`WS_JOURNAL.APPLICATION_ID`). */
  readonly id: number;
  /** The secrets that key request signatures: a signature made with any of them is accepted (rotation). */
  readonly apiHashes: readonly string[];
  readonly active: boolean;
}

/** An operation of `WS_OPERATION`: the procedure behind a `vltyp` and the name of its rows. */
export interface Operation {
  readonly vltyp: number;
  /** `schema.NAME` or `NAME`; checked as an identifier before it reaches SQL. */
  readonly procedure: string;
  readonly rowName: string;
}

export type JournalState = 'running' | 'finished' | 'failed';
export type CallMode = 'sync' | 'async';

/** A `WS_JOURNAL` row. */
export interface JournalEntry {
  readonly id: number;
  readonly applicationId: number;
  readonly vltyp: number;
  readonly state: JournalState;
  /** The canonical JSON request envelope. */
  readonly request: string;
  /** The JSON answer, once finished or failed. */
  readonly answer: string | undefined;
  readonly rowName: string | undefined;
  /**
   * Attempts at the job: the workers that took it (each counted when it took its lease). The
   * queue's receive count is no measure of them, as it also counts receives that never reached a
   * worker (a throttled consumer).
   */
  readonly attempts: number;
  /** True while a worker holds the job (its lease has not run out). */
  readonly leaseHeld: boolean;
  /** Seconds since the call was journaled, by the database's clock. */
  readonly ageSeconds: number;
}

export interface JournalOpening {
  readonly applicationId: number;
  readonly vltyp: number;
  readonly mode: CallMode;
  readonly request: string;
  readonly requestId: string;
  /** The W3C trace id of the call's request, kept beside the journal row (CONTRACT 8a). */
  readonly traceId?: string;
}

/** A signed request to be recorded as accepted, unless it already was within `holdSeconds`. */
export interface RequestClaim {
  readonly applicationId: number;
  readonly requestDigest: string;
  readonly holdSeconds: number;
}

export interface JournalOutcome {
  readonly state: 'finished' | 'failed';
  readonly answer: string;
  readonly vlResult: number;
  readonly rowName: string | undefined;
}

/** The operation failed inside the database; `publicMessage` is what the procedure itself reported, if anything. */
export class OperationFailedError extends Error {
  override readonly name = 'OperationFailedError';
  /** The procedure ended the service's transaction itself (a ROLLBACK or COMMIT of its own). */
  readonly endedTransaction: boolean;
  /**
   * The service's transaction cannot go on (the procedure ended it, or its failure doomed it):
   * nothing more can commit in it, neither the journal's answer nor a key's record.
   */
  readonly transactionLost: boolean;
  constructor(
    message: string,
    readonly publicMessage: string | undefined,
    options?: ErrorOptions & { endedTransaction?: boolean; transactionLost?: boolean },
  ) {
    super(message, options);
    this.endedTransaction = options?.endedTransaction ?? false;
    this.transactionLost = options?.transactionLost ?? this.endedTransaction;
  }
}

/** Port: the Web API's tables and operation procedures in the tenant database. */
export interface WebApiStore {
  /** The application of an `x-api-key`: the registry's, or the ERP register's (see tenantWebApiStore). */
  findApplication(apiKey: string): Promise<Application | undefined>;
  /**
   * Records that a signed request was accepted, unless the same request already was within its
   * hold time: true for the first caller only, however many ask at once.
   */
  claimRequest(applicationId: number, requestDigest: string, holdSeconds: number): Promise<boolean>;
  findOperation(vltyp: number): Promise<Operation | undefined>;
  /**
   * This store in a transaction of the tenant's database (CONTRACT 5a: the operation's effects,
   * the journal's final answer and a key's record commit together): its operation's procedure
   * runs behind a save point, so that its failure undoes its own writes only.
   */
  within(tx: Transaction): WebApiStore;
  /** Runs `effects` with this store in a transaction of its own (a call without a key). */
  transaction<T>(effects: (store: WebApiStore) => Promise<T>): Promise<T>;
  /**
   * Calls the operation's procedure with the params as one JSON argument; its first result set.
   * Throws {@link OperationFailedError}; an abort of `signal` cancels the call in the database.
   */
  callOperation(operation: Operation, params: readonly ParamObject[], signal?: AbortSignal): Promise<Row[]>;
  /** Journals a call as running; its id. */
  openJournal(opening: JournalOpening): Promise<number>;
  /**
   * {@link claimRequest} and, for the first caller only, {@link openJournal}, in one round trip
   * to the database: the journal id, or undefined when the request was already claimed (then
   * nothing is journaled).
   */
  claimAndOpenJournal(claim: RequestClaim, opening: JournalOpening): Promise<number | undefined>;
  /** Ends a running journal entry; false when it was no longer running (another worker or a sweep ended it). */
  finishJournal(id: number, outcome: JournalOutcome): Promise<boolean>;
  /**
   * Ends a running job for the worker of attempt `attempt` only while that attempt is the job's
   * latest: a slow worker whose lease lapsed and whose job a successor took (counting the next
   * attempt) finishes nothing, so the row is finished once, by the lease holder. False otherwise.
   */
  finishAttempt(id: number, attempt: number, outcome: JournalOutcome): Promise<boolean>;
  readJournal(id: number): Promise<JournalEntry | undefined>;
  /**
   * Starts a worker's attempt at a running job: counts it and leases the job for `leaseSeconds`,
   * unless it has ended, another worker holds the lease, or it has had `maxAttempts` attempts
   * already; undefined then (readJournal tells which).
   */
  startAttempt(id: number, leaseSeconds: number, maxAttempts: number): Promise<JournalEntry | undefined>;
  /**
   * Gives up the lease of attempt `attempt` on a running job, so that its next delivery can start
   * at once; nothing when a successor holds the job by then.
   */
  releaseJob(id: number, attempt: number): Promise<void>;
}
