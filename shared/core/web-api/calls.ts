import { setTimeout as sleep } from 'node:timers/promises';
import { DatabasePermissionError } from '../database.js';
import { type Log, silentLog } from '../log.js';
import {
  type CallResult,
  journalIdOfResultRequest,
  RESULT_FOR_ID,
  type WebApiAnswer,
  WebApiError,
  WebApiErrorCode,
  type WebApiRequest,
} from './envelope.js';
import { executeOperation, failedOutcome } from './operations.js';
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

export interface WebApiContext {
  readonly tenant: string;
  readonly store: WebApiStore;
  readonly policy: WebApiPolicy;
  readonly requestId: string;
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

/** A call past every gate: a 997 (claimed, not yet journaled) or an operation journaled as running. */
export type BegunCall =
  | { readonly application: Application; readonly request: WebApiRequest; readonly operation: undefined }
  | {
      readonly application: Application;
      readonly request: WebApiRequest;
      readonly operation: Operation;
      readonly journalId: number;
    };

/**
 * The gates of `getData` and `getDataAsync`, in order: headers (101), key (102), signature (103,
 * 104), replay (105), envelope (100), vltyp (110); nothing runs and nothing is journaled for a call
 * refused here. An operation's call is claimed and journaled in one round trip to the database;
 * a call refused for its envelope or vltyp is claimed first all the same, so that a replay of it
 * is a 409 as before.
 */
export async function beginCall(ctx: WebApiContext, call: SignedCall, mode: CallMode): Promise<BegunCall> {
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
  if (!operation) {
    await claimOrRefuse(ctx, claim);
    return { application, request, operation };
  }
  const opening: JournalOpening = {
    applicationId: application.id,
    vltyp: request.vltyp,
    mode,
    request: JSON.stringify(request),
    requestId: ctx.requestId,
  };
  const journalId = claim
    ? await ctx.store.claimAndOpenJournal(claim, opening)
    : await ctx.store.openJournal(opening);
  if (journalId === undefined) throw replayed(ctx);
  return { application, request, operation, journalId };
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
 * The 997 call is journaled too.
 */
export async function resultForId(
  ctx: WebApiContext,
  application: Application,
  request: WebApiRequest,
  mode: CallMode,
): Promise<CallResult> {
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
  await ctx.store.finishJournal(journalId, {
    state: 'finished',
    answer: JSON.stringify(answer),
    vlResult: 1,
    rowName: entry.rowName,
  });
  return { answer, rowName: entry.rowName };
}

/** How long a cancelled operation may take to stop before `getData` answers 161 regardless. */
const CANCEL_GRACE_MS = 1500;

/**
 * Runs an operation for `getData` until `deadline` (ms since the epoch); past it, cancels the
 * operation in the database and returns the failed outcome 161, whether or not the database has
 * stopped within a short grace (a late finish cannot overwrite it: the journal row has ended).
 */
async function executeWithinSyncLimit(
  ctx: WebApiContext,
  operation: Operation,
  request: WebApiRequest,
  journalId: number,
  deadline: number,
): Promise<JournalOutcome> {
  const cancellation = new AbortController();
  const work = executeOperation(ctx.store, operation, request, journalId, ctx, cancellation.signal);
  // A plain timer, cleared when the operation ends first: aborting a signal builds an error with
  // its stack on every call, which a call that ends in time should not pay for.
  let timer: NodeJS.Timeout | undefined;
  const reached = new Promise<'limit'>((resolve) => {
    timer = setTimeout(() => resolve('limit'), Math.max(0, deadline - clock(ctx)));
  });
  try {
    const first = await Promise.race([work, reached]);
    if (first !== 'limit') return first;
  } finally {
    clearTimeout(timer);
  }
  cancellation.abort();
  const stopped = await Promise.race([
    work.then(
      () => true,
      () => true,
    ),
    sleep(CANCEL_GRACE_MS, false),
  ]);
  const seconds = ctx.policy.syncTimeLimitSeconds;
  (ctx.log ?? silentLog).warn('operation cancelled after the synchronous time limit', {
    requestId: ctx.requestId,
    journalId,
    vltyp: operation.vltyp,
    limitSeconds: seconds,
    databaseStopped: stopped,
  });
  return failedOutcome(
    journalId,
    WebApiErrorCode.syncTimeLimit,
    `The operation (vltyp ${operation.vltyp}, journal ${journalId}) did not finish within the synchronous time limit of ${seconds} s and was cancelled; use getDataAsync`,
  );
}

/**
 * `getData`: runs the operation and answers its result; every accepted call is journaled. An
 * operation still running `syncTimeLimitSeconds` after the call arrived is cancelled and answered
 * 161 (HTTP 200, `vlResult` -1, journaled as failed, so 997 gives the same answer).
 */
export async function getData(ctx: WebApiContext, call: SignedCall): Promise<CallResult> {
  const deadline = clock(ctx) + ctx.policy.syncTimeLimitSeconds * 1000;
  const begun = await beginCall(ctx, call, 'sync');
  if (!begun.operation) return resultForId(ctx, begun.application, begun.request, 'sync');
  const { operation, request, journalId } = begun;
  let outcome: JournalOutcome;
  try {
    outcome = await executeWithinSyncLimit(ctx, operation, request, journalId, deadline);
  } catch (error) {
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
  await ctx.store.finishJournal(journalId, outcome);
  return { answer: JSON.parse(outcome.answer) as WebApiAnswer, rowName: outcome.rowName };
}
