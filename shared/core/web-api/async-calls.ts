import { setTimeout as sleep } from 'node:timers/promises';
import type { TraceContext } from '../trace-context.js';
import {
  admitCall,
  type CallAnswer,
  callUnderKey,
  clock,
  type KeyedRun,
  openCall,
  resultForId,
  type SignedCall,
  type WebApiContext,
} from './calls.js';
import { type CallResult, errorAnswer, type WebApiAnswer, WebApiErrorCode } from './envelope.js';
import { failedOutcome } from './operations.js';
import type { JournalEntry } from './store.js';

/** A job on the queue: the journal entry to run, in the tenant's database. */
export interface WebApiJob {
  readonly tenant: string;
  readonly journalId: number;
  /** The request that queued it, for the logs. */
  readonly requestId: string;
}

/** Port: the queue of asynchronous jobs. */
export interface JobQueue {
  /** `trace`: the calling request's span, which the worker's work continues (CONTRACT 8a). */
  enqueue(job: WebApiJob, trace?: TraceContext): Promise<void>;
}

// A fast operation ends a few milliseconds after it is queued; the first looks come soon after,
// then less and less often (5, 7.5, 11 … ms, at most 500), about 40 journal reads in 20 s.
const FIRST_POLL_MS = 5;
const POLL_GROWTH = 1.5;
const MAX_POLL_MS = 500;

/** Polls a journal entry until it has ended or `deadline` (ms since the epoch) passes, pausing longer each time. */
async function waitForEnd(ctx: WebApiContext, journalId: number, deadline: number) {
  let pause = FIRST_POLL_MS;
  while (true) {
    const entry = await ctx.store.readJournal(journalId);
    if (entry && entry.state !== 'running' && entry.answer !== undefined) return entry;
    const left = deadline - clock(ctx);
    if (left <= 0) return undefined;
    await sleep(Math.min(pause, left));
    pause = Math.min(pause * POLL_GROWTH, MAX_POLL_MS);
  }
}

const ended = (entry: JournalEntry): CallResult => ({
  answer: JSON.parse(entry.answer!) as WebApiAnswer,
  rowName: entry.rowName,
});

/**
 * Waits for job `journalId` until `CommandTimeoutAsync` after the request arrived: its answer once
 * ended, else `vlResult` -2 with error 160 and the journal id, while the job goes on.
 */
async function answerOfJob(ctx: WebApiContext, journalId: number, vltyp: number): Promise<CallResult> {
  // Counted from the request's arrival (CONTRACT.md section 5): under load the statements before
  // this point can take seconds, which a caller waiting on the gateway's 30 s must not pay twice.
  const deadline = (ctx.arrivedAt ?? clock(ctx)) + ctx.policy.commandTimeoutAsyncSeconds * 1000;
  const entry = await waitForEnd(ctx, journalId, deadline);
  if (entry) return ended(entry);
  return {
    answer: errorAnswer(
      journalId,
      WebApiErrorCode.timeLimit,
      `The requested operation (vltyp ${vltyp}, journal ${journalId}) did not finish within the time limit`,
      -2,
    ),
    rowName: undefined,
  };
}

/** Queues a journaled job; should that fail, nothing will run it: its row ends failed and its key's record goes. */
async function enqueueJob(
  ctx: WebApiContext,
  queue: JobQueue,
  journalId: number,
  keyed: KeyedRun | undefined,
): Promise<void> {
  try {
    await queue.enqueue({ tenant: ctx.tenant, journalId, requestId: ctx.requestId }, ctx.trace);
  } catch (error) {
    await ctx.store
      .finishJournal(
        journalId,
        failedOutcome(journalId, WebApiErrorCode.internal, 'The job could not be queued; nothing was run'),
      )
      .catch(() => false);
    // Its retry under the same key runs (nothing did).
    if (keyed) await ctx.keys.forget(keyed.key.digest).catch(() => undefined);
    throw error;
  }
}

/**
 * `getDataAsync`: journals the call as running, queues it for the worker and waits up to
 * `CommandTimeoutAsync` for it to end; past that, `vlResult` -2 with error 160 and the journal id,
 * while the job goes on. 997 is answered at once, as on `getData`. With an `Idempotency-Key`
 * (CONTRACT 5a) the key's record is the journal id, committed before the job is queued: a retry
 * answers the same job (-2/160 while it runs, its final answer once ended), and queues nothing.
 */
export async function getDataAsyncOnce(
  ctx: WebApiContext,
  call: SignedCall,
  queue: JobQueue,
): Promise<CallAnswer> {
  const admitted = await admitCall(ctx, call, 'async');
  const { operation, request } = admitted;
  return callUnderKey(
    ctx,
    admitted,
    async (keyed) => {
      if (!operation) return resultForId(ctx, admitted, keyed);
      const opening = { ...admitted, operation };
      // Under a key the journal's row and the key's record commit together, in the transaction
      // that holds the key (and on its connection: a request function has only one).
      const journalId = keyed
        ? await keyed.hold.commit(async (tx) => {
            const id = await openCall({ ...ctx, store: ctx.store.within(tx) }, opening);
            return {
              value: id,
              record: { fingerprint: keyed.key.fingerprint, answer: { status: 200, journalId: id } },
            };
          })
        : await openCall(ctx, opening);
      await enqueueJob(ctx, queue, journalId, keyed);
      return { result: await answerOfJob(ctx, journalId, request.vltyp), replayed: false };
    },
    async (recorded) =>
      recorded.journalId === undefined
        ? { recorded, replayed: true }
        : { result: await answerOfJob(ctx, recorded.journalId, request.vltyp), replayed: true },
  );
}

/** `getDataAsync` without a key: its result. */
export async function getDataAsync(
  ctx: WebApiContext,
  call: SignedCall,
  queue: JobQueue,
): Promise<CallResult> {
  const { idempotency: _none, ...unkeyed } = ctx;
  return (await getDataAsyncOnce(unkeyed, call, queue)).result!;
}
