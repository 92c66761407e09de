import { DatabasePermissionError } from '../database.js';
import {
  type CallKey,
  callKey,
  type IdempotencyStore,
  type KeyHold,
  onceUnderKey,
  type RecordedAnswer,
  requestFingerprint,
} from '../idempotency.js';
import { type Log, silentLog } from '../log.js';
import { atMost } from '../time-limit.js';
import type { TraceContext } from '../trace-context.js';
import {
  type CallResult,
  journalIdOfResultRequest,
  RESULT_FOR_ID,
  type WebApiAnswer,
  WebApiError,
  WebApiErrorCode,
  type WebApiRequest,
} from './envelope.js';
import { executeOperation, failedOutcome, operationFailedOutcome } from './operations.js';
import { verifySignature } from './signature.js';
import type {
  Application,
  CallMode,
  JournalEntry,
  JournalOpening,
  JournalOutcome,
  Operation,
  RequestClaim,
  WebApiStore,
} from './store.js';
import { OperationFailedError } from './store.js';

/** The tenant's Web API settings (CONTRACT.md section 2) as the use cases need them. */
export interface WebApiPolicy {
  readonly requestMaxSecValidity: number;
  readonly checkReplayRequest: boolean;
  readonly replayRequestTime: number;
  /** How long `getDataAsync` waits for its job before it answers -2/160. */
  readonly commandTimeoutAsyncSeconds: number;
  /** A job still running after this long has lost its worker: 997 ends it as failed. */
  readonly jobStaleSeconds: number;
  /**
   * How long `getData` gives a call, from its arrival, before it cancels the operation and answers
   * 161: a few seconds below the HTTP API's 30 s, so that the answer (with its journal id) gets out.
   */
  readonly syncTimeLimitSeconds: number;
}

/** A call's `Idempotency-Key` (CONTRACT 5a), as its route read it. */
export interface CallIdempotency {
  /** The header as sent (parsed again by the core, which knows the caller). */
  readonly header: string;
  readonly retentionHours: number;
  /**
   * The answer as it will leave (its format negotiated, one over the inline limit stored): recorded
   * under the key in the transaction of the call's effects, and what the call answers.
   */
  recordAnswer(result: CallResult): Promise<RecordedAnswer>;
}

export interface WebApiContext {
  readonly tenant: string;
  readonly store: WebApiStore;
  /** The keys' records of the tenant's database (CONTRACT 5a). */
  readonly keys: IdempotencyStore;
  /** The call's `Idempotency-Key`, when it was sent with one. */
  readonly idempotency?: CallIdempotency;
  readonly policy: WebApiPolicy;
  readonly requestId: string;
  /** The request's span (CONTRACT 8a): a queued job continues it. */
  readonly trace?: TraceContext;
  /** Where warnings go (none when absent). */
  readonly log?: Log;
  /** Milliseconds since the epoch (tests pass their own clock). */
  readonly now?: () => number;
  /**
   * When the request arrived (ms since the epoch, the gateway's time stamp): `getDataAsync`'s wait
   * is counted from it, not from the end of the signature, replay and journal statements.
   */
  readonly arrivedAt?: number;
}

/** A signed call as it arrived: headers, the raw body, and how to decode it once it is admitted. */
export interface SignedCall {
  readonly apiKey: string | undefined;
  readonly signature: string | undefined;
  readonly body: Uint8Array;
  /** Decodes the body into an envelope; throws 400/100. Called only once the signature is verified. */
  readonly decode: () => WebApiRequest;
}

/** Journal ids and `vltyp` are SQL `int`s. */
const MAX_JOURNAL_ID = 2 ** 31 - 1;
const isSqlInt = (value: number) => value >= -(2 ** 31) && value <= 2 ** 31 - 1;

/** Milliseconds since the epoch, by the context's clock. */
export const clock = (ctx: WebApiContext) => (ctx.now ?? Date.now)();

/** The application of an `x-api-key`: 400/101 when it is missing, 401/102 when unknown or inactive. */
export async function authenticateApplication(
  store: WebApiStore,
  apiKey: string | undefined,
): Promise<Application> {
  if (!apiKey) throw new WebApiError(WebApiErrorCode.missingHeader, 'Header x-api-key is missing');
  const application = await store.findApplication(apiKey);
  if (!application?.active) {
    throw new WebApiError(
      WebApiErrorCode.unknownApiKey,
      'x-api-key is unknown or its application is inactive',
    );
  }
  return application;
}

/**
 * The first gates of `getData` and `getDataAsync`, in order: headers present (101), key (102),
 * signature (103, 104). The replay check (105) follows in {@link beginCall}.
 */
async function authenticateCall(
  ctx: WebApiContext,
  call: SignedCall,
): Promise<{ application: Application; claim: RequestClaim | undefined }> {
  const missing = [
    call.apiKey ? undefined : 'x-api-key',
    call.signature ? undefined : 'x-svc-signature',
  ].filter(Boolean);
  if (missing.length > 0) {
    throw new WebApiError(WebApiErrorCode.missingHeader, `Missing header: ${missing.join(', ')}`);
  }
  const application = await authenticateApplication(ctx.store, call.apiKey);
  const { requestDigest } = verifySignature(
    call.signature!,
    application.apiHashes,
    call.body,
    Math.floor(clock(ctx) / 1000),
    ctx.policy.requestMaxSecValidity,
  );
  const claim = ctx.policy.checkReplayRequest
    ? { applicationId: application.id, requestDigest, holdSeconds: ctx.policy.replayRequestTime }
    : undefined;
  return { application, claim };
}

function replayed(ctx: WebApiContext) {
  return new WebApiError(
    WebApiErrorCode.replayedRequest,
    `This request was already accepted within the last ${ctx.policy.replayRequestTime} s; sign it again with a new time stamp`,
  );
}

/** The replay check on its own: 409/105 for a request already accepted. */
async function claimOrRefuse(ctx: WebApiContext, claim: RequestClaim | undefined): Promise<void> {
  if (claim && !(await ctx.store.claimRequest(claim.applicationId, claim.requestDigest, claim.holdSeconds))) {
    throw replayed(ctx);
  }
}

/**
 * A call past every gate that refuses it before anything runs: its application, its envelope and,
 * unless it is a 997, its operation. Nothing is journaled yet, and its replay claim is not taken.
 */
export interface AdmittedCall {
  readonly application: Application;
  readonly request: WebApiRequest;
  /** Undefined for a 997. */
  readonly operation: Operation | undefined;
  readonly claim: RequestClaim | undefined;
  readonly mode: CallMode;
  /** The body as sent, for the call's fingerprint under a key. */
  readonly body: Uint8Array;
}

/**
 * The gates of `getData` and `getDataAsync` that refuse a call before anything runs, in order:
 * headers (101), key (102), signature (103, 104), envelope (100), vltyp (110). A call refused for
 * its envelope or vltyp still has its request claimed, so that a replay of it is a 409 as before;
 * one admitted has its replay checked (105) by {@link openCall}, after its `Idempotency-Key`.
 */
export async function admitCall(ctx: WebApiContext, call: SignedCall, mode: CallMode): Promise<AdmittedCall> {
  const { application, claim } = await authenticateCall(ctx, call);
  let request: WebApiRequest;
  let operation: Operation | undefined;
  try {
    request = call.decode();
    if (request.vltyp !== RESULT_FOR_ID) operation = await requireOperation(ctx, request.vltyp);
  } catch (error) {
    await claimOrRefuse(ctx, claim);
    throw error;
  }
  return { application, request, operation, claim, mode, body: call.body };
}

/** The replay check (105) and, for an operation, its journal row as running, in one round trip. */
export async function openCall(
  ctx: WebApiContext,
  call: AdmittedCall & { operation: Operation },
): Promise<number> {
  const opening: JournalOpening = {
    applicationId: call.application.id,
    vltyp: call.request.vltyp,
    mode: call.mode,
    request: JSON.stringify(call.request),
    requestId: ctx.requestId,
    traceId: ctx.trace?.traceId,
  };
  const journalId = call.claim
    ? await ctx.store.claimAndOpenJournal(call.claim, opening)
    : await ctx.store.openJournal(opening);
  if (journalId === undefined) throw replayed(ctx);
  return journalId;
}

/** A call's answer on its way out. */
export interface CallAnswer {
  /** What the call came to; absent when a recorded answer is replayed as it was. */
  readonly result?: CallResult;
  /** The answer recorded under the call's key: what leaves, byte for byte. */
  readonly recorded?: RecordedAnswer;
  /** Nothing ran: the answer of the first call under the same key (`Idempotent-Replayed: true`). */
  readonly replayed: boolean;
}

/** A call held under its key while it runs: its answer is recorded with its effects. */
export interface KeyedRun {
  readonly hold: KeyHold;
  readonly key: CallKey;
  readonly idempotency: CallIdempotency;
}

/** The routes' names in a fingerprint (another route with the same body is another request). */
const ROUTE_OF_MODE: Readonly<Record<CallMode, string>> = {
  sync: 'WebAPI/getData',
  async: 'WebAPI/getDataAsync',
};

/** The key of an admitted call sent with an `Idempotency-Key`: the tenant's and the application's. */
function keyOfCall(ctx: WebApiContext, call: AdmittedCall): CallKey | undefined {
  const { idempotency } = ctx;
  if (!idempotency) return undefined;
  return callKey(
    idempotency.header,
    { tenant: ctx.tenant, caller: `application:${call.application.id}` },
    () => requestFingerprint(ROUTE_OF_MODE[call.mode], [call.body]),
    idempotency.retentionHours,
  );
}

/**
 * Runs `run` under the call's key (CONTRACT 5a): the recorded answer of the same request is
 * replayed, and nothing runs (`replay` answers it: an asynchronous call's job is waited for
 * again); the same key with another request is 422/107, a key whose first call still runs 409/108.
 * Without a key, `run` runs.
 */
export async function callUnderKey(
  ctx: WebApiContext,
  call: AdmittedCall,
  run: (keyed: KeyedRun | undefined) => Promise<CallAnswer>,
  replay: (recorded: RecordedAnswer) => Promise<CallAnswer> = async (recorded) => ({
    recorded,
    replayed: true,
  }),
): Promise<CallAnswer> {
  const key = keyOfCall(ctx, call);
  const outcome = await onceUnderKey(ctx.keys, key, (hold) =>
    run(hold && key && ctx.idempotency ? { hold, key, idempotency: ctx.idempotency } : undefined),
  );
  return outcome.ran ? outcome.value : replay(outcome.replay);
}

/** The journal row ended meanwhile (a 997 ended it as stale, or a later attempt finished it). */
export class JournalEndedError extends Error {
  override readonly name = 'JournalEndedError';
  constructor(readonly journalId: number) {
    super(`Journal entry ${journalId} is no longer running`);
  }
}

const resultOf = (outcome: JournalOutcome): CallResult => ({
  answer: JSON.parse(outcome.answer) as WebApiAnswer,
  rowName: outcome.rowName,
});

/**
 * The one transaction of a call's effects (CONTRACT 5a): `produce` runs (the operation's
 * procedure, behind its save point), `finish` writes the journal's final answer, and under a key
 * the answer as it will leave is recorded; all of it commits together, or none of it. A journal
 * row that is no longer running ({@link JournalEndedError}) rolls the effects back: another has
 * ended the call meanwhile, and its word stands.
 */
export async function commitCall(
  store: WebApiStore,
  journalId: number,
  produce: (store: WebApiStore) => Promise<JournalOutcome>,
  finish: (store: WebApiStore, outcome: JournalOutcome) => Promise<boolean>,
  keyed?: KeyedRun,
): Promise<CallAnswer> {
  const effects = async (tx: WebApiStore) => {
    const outcome = await produce(tx);
    if (!(await finish(tx, outcome))) throw new JournalEndedError(journalId);
    const result = resultOf(outcome);
    const recorded = keyed ? await keyed.idempotency.recordAnswer(result) : undefined;
    return { result, recorded, replayed: false };
  };
  if (!keyed) return store.transaction(effects);
  return keyed.hold.commit(async (tx) => {
    const value = await effects(store.within(tx));
    return { value, record: { fingerprint: keyed.key.fingerprint, answer: value.recorded! } };
  });
}

/** The operation of a `vltyp`: 404/110 when there is none (or it is inactive). */
export async function requireOperation(ctx: WebApiContext, vltyp: number): Promise<Operation> {
  // A vltyp beyond the column's range names no operation; the database would refuse it (a 500).
  const operation = isSqlInt(vltyp) ? await ctx.store.findOperation(vltyp) : undefined;
  if (!operation) throw new WebApiError(WebApiErrorCode.unknownVltyp, `Unknown vltyp ${vltyp}`);
  return operation;
}

/** Ends a job whose worker stopped without finishing it, so that nothing stays running forever. */
async function settleStaleJob(ctx: WebApiContext, entry: JournalEntry): Promise<JournalEntry> {
  if (entry.state !== 'running' || entry.ageSeconds <= ctx.policy.jobStaleSeconds) return entry;
  await ctx.store.finishJournal(
    entry.id,
    failedOutcome(
      entry.id,
      WebApiErrorCode.jobAbandoned,
      `The operation did not complete: it was still running after ${Math.floor(entry.ageSeconds)} s, longer than any worker runs`,
    ),
  );
  return (await ctx.store.readJournal(entry.id)) ?? entry;
}

/**
 * Operation 997: the state of an earlier call of the same application (`resultForId` with error
 * 160 while it runs) or its complete answer; 404/111 for a journal id that is not the caller's.
 * The 997 call is journaled too; under a key, its answer is recorded with its journal row's end.
 */
export async function resultForId(
  ctx: WebApiContext,
  call: Pick<AdmittedCall, 'application' | 'request' | 'mode' | 'claim'>,
  keyed?: KeyedRun,
): Promise<CallAnswer> {
  await claimOrRefuse(ctx, call.claim);
  const { application, request, mode } = call;
  const id = journalIdOfResultRequest(request.params);
  const found = id >= 1 && id <= MAX_JOURNAL_ID ? await ctx.store.readJournal(id) : undefined;
  if (!found || found.applicationId !== application.id) {
    throw new WebApiError(
      WebApiErrorCode.unknownJournal,
      `Journal entry ${id} does not exist for this application`,
    );
  }
  const entry = await settleStaleJob(ctx, found);
  const journalId = await ctx.store.openJournal({
    applicationId: application.id,
    vltyp: RESULT_FOR_ID,
    mode,
    request: JSON.stringify(request),
    requestId: ctx.requestId,
    traceId: ctx.trace?.traceId,
  });
  const answer: WebApiAnswer =
    entry.state === 'running' || entry.answer === undefined
      ? {
          id: journalId,
          vlResult: 1,
          data: [
            {
              resultForId: [
                {
                  errorCode: Number(WebApiErrorCode.timeLimit),
                  errorMessage: `The requested operation (journal ${id}) has not finished yet; ask again later`,
                },
              ],
              idws_journal: id,
            },
          ],
        }
      : { id: journalId, vlResult: 1, data: [{ resultForId: JSON.parse(entry.answer), id }] };
  const outcome: JournalOutcome = {
    state: 'finished',
    answer: JSON.stringify(answer),
    vlResult: 1,
    rowName: entry.rowName,
  };
  if (keyed) {
    return commitCall(
      ctx.store,
      journalId,
      async () => outcome,
      (tx, ended) => tx.finishJournal(journalId, ended),
      keyed,
    );
  }
  await ctx.store.finishJournal(journalId, outcome);
  return { result: { answer, rowName: entry.rowName }, replayed: false };
}

/** How long a cancelled operation may take to stop before `getData` answers 161 regardless. */
const CANCEL_GRACE_MS = 1500;

/**
 * Runs an operation for `getData` in its transaction until `deadline` (ms since the epoch); past
 * it, cancels the operation in the database (its transaction rolls back: nothing of it is kept, and
 * nothing recorded under a key) and ends the journal row with 161, whether or not the database has
 * stopped within a short grace. Should the transaction have committed after all (its end raced the
 * limit), its answer stands: the journal row then is no longer running, and says so.
 */
async function executeWithinSyncLimit(
  ctx: WebApiContext,
  operation: Operation,
  request: WebApiRequest,
  journalId: number,
  deadline: number,
  keyed: KeyedRun | undefined,
): Promise<CallAnswer> {
  const cancellation = new AbortController();
  const work = commitCall(
    ctx.store,
    journalId,
    (tx) => executeOperation(tx, operation, request, journalId, ctx, cancellation.signal),
    (tx, outcome) => tx.finishJournal(journalId, outcome),
    keyed,
  );
  const first = await atMost(work, deadline - clock(ctx), () => 'limit' as const);
  if (first !== 'limit') return first;
  cancellation.abort();
  const late = await atMost(
    work.then(
      (answer) => answer,
      () => 'stopped' as const,
    ),
    CANCEL_GRACE_MS,
    () => 'running' as const,
  );
  if (typeof late === 'object') return late;
  const seconds = ctx.policy.syncTimeLimitSeconds;
  (ctx.log ?? silentLog).warn('operation cancelled after the synchronous time limit', {
    requestId: ctx.requestId,
    journalId,
    vltyp: operation.vltyp,
    limitSeconds: seconds,
    databaseStopped: late === 'stopped',
  });
  const outcome = failedOutcome(
    journalId,
    WebApiErrorCode.syncTimeLimit,
    `The operation (vltyp ${operation.vltyp}, journal ${journalId}) did not finish within the synchronous time limit of ${seconds} s and was cancelled; use getDataAsync`,
  );
  if (await ctx.store.finishJournal(journalId, outcome))
    return { result: resultOf(outcome), replayed: false };
  // The transaction committed after all: its answer, as journaled (and recorded under a key).
  return (await work.catch(() => undefined)) ?? journaledAnswer(ctx, journalId);
}

/** The answer a journal row ended with. */
async function journaledAnswer(ctx: WebApiContext, journalId: number): Promise<CallAnswer> {
  const entry = await ctx.store.readJournal(journalId);
  if (entry?.answer === undefined) throw new JournalEndedError(journalId);
  return {
    result: { answer: JSON.parse(entry.answer) as WebApiAnswer, rowName: entry.rowName },
    replayed: false,
  };
}

/**
 * Runs an admitted synchronous call: its journal row opened, its operation and the journal's final
 * answer in one transaction (under a key, with the answer's record). An operation still running
 * `syncTimeLimitSeconds` after the call arrived is cancelled and answered 161 (HTTP 200, `vlResult`
 * -1, journaled as failed, so 997 gives the same answer).
 */
async function runSyncCall(
  ctx: WebApiContext,
  call: AdmittedCall,
  deadline: number,
  keyed: KeyedRun | undefined,
): Promise<CallAnswer> {
  const { operation, request } = call;
  if (!operation) return resultForId(ctx, call, keyed);
  const journalId = await openCall(ctx, { ...call, operation });
  try {
    return await executeWithinSyncLimit(ctx, operation, request, journalId, deadline, keyed);
  } catch (error) {
    if (error instanceof JournalEndedError) return journaledAnswer(ctx, journalId);
    if (error instanceof OperationFailedError && error.transactionLost) {
      // Nothing can be recorded in a transaction that is gone: journaled as failed on its own, and
      // a retry under the same key runs again.
      const outcome = operationFailedOutcome(journalId, operation, error, ctx);
      await ctx.store.finishJournal(journalId, outcome);
      return { result: resultOf(outcome), replayed: false };
    }
    if (!(error instanceof DatabasePermissionError)) throw error;
    // The login may not execute the procedure: journaled as failed (997 answers the same), and
    // the call answered 500/180 with its journal id and what to grant.
    await ctx.store
      .finishJournal(
        journalId,
        failedOutcome(journalId, WebApiErrorCode.databasePermissionDenied, error.message),
      )
      .catch(() => undefined);
    throw new WebApiError(WebApiErrorCode.databasePermissionDenied, error.message, {
      cause: error,
      journalId,
    });
  }
}

/**
 * `getData`: runs the operation and answers its result; every accepted call is journaled. With an
 * `Idempotency-Key` (CONTRACT 5a) it runs once: a retry gets the first call's recorded answer.
 */
export async function getDataOnce(ctx: WebApiContext, call: SignedCall): Promise<CallAnswer> {
  const deadline = clock(ctx) + ctx.policy.syncTimeLimitSeconds * 1000;
  const admitted = await admitCall(ctx, call, 'sync');
  return callUnderKey(ctx, admitted, (keyed) => runSyncCall(ctx, admitted, deadline, keyed));
}

/** `getData` without a key: its result. */
export async function getData(ctx: WebApiContext, call: SignedCall): Promise<CallResult> {
  const { idempotency: _none, ...unkeyed } = ctx;
  const answer = await getDataOnce(unkeyed, call);
  return answer.result!;
}
