import type { Row } from '../database.js';
import { type Log, silentLog } from '../log.js';
import { errorAnswer, type WebApiAnswer, WebApiErrorCode, type WebApiRequest } from './envelope.js';
import { type JournalOutcome, type Operation, OperationFailedError, type WebApiStore } from './store.js';

/**
 * One result row as the answer carries it: lower-case names (`kod_uctu`), NULLs left out,
 * date-times `YYYY-MM-DDThh:mm:ss`, binary base64, flags 1/0, like the Data API.
 */
export function encodeRow(row: Row): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(row)) {
    if (value === null || value === undefined) continue;
    record[name.toLowerCase()] = encodeValue(value);
  }
  return record;
}

function encodeValue(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString().slice(0, 19);
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'bigint')
    return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  return value;
}

/** The outcome of a failed call, as journaled and answered. */
export function failedOutcome(journalId: number, code: WebApiErrorCode, message: string): JournalOutcome {
  return {
    state: 'failed',
    answer: JSON.stringify(errorAnswer(journalId, code, message)),
    vlResult: -1,
    rowName: undefined,
  };
}

/**
 * Runs an operation for journal entry `journalId`: its rows as a finished outcome, or, when the
 * procedure fails inside the database, a failed one with `vlResult` -1 and error 120. Anything
 * else (database unreachable, a bug, a cancellation through `signal`) is thrown.
 */
export async function executeOperation(
  store: WebApiStore,
  operation: Operation,
  request: WebApiRequest,
  journalId: number,
  trace: { readonly requestId: string; readonly log?: Log },
  signal?: AbortSignal,
): Promise<JournalOutcome> {
  try {
    const rows = await store.callOperation(operation, request.params, signal);
    const answer: WebApiAnswer = { id: journalId, vlResult: 1, data: rows.map(encodeRow) };
    return { state: 'finished', answer: JSON.stringify(answer), vlResult: 1, rowName: operation.rowName };
  } catch (error) {
    // A transaction the procedure ended or doomed can record nothing: its caller ends the call.
    if (!(error instanceof OperationFailedError) || error.transactionLost) throw error;
    return operationFailedOutcome(journalId, operation, error, trace);
  }
}

/**
 * The outcome 120 of an operation that failed in the database: the procedure's own words when it
 * raised them, and, when it ended the service's transaction itself, that it did.
 */
export function operationFailedOutcome(
  journalId: number,
  operation: Operation,
  error: OperationFailedError,
  trace: { readonly requestId: string; readonly log?: Log },
): JournalOutcome {
  (trace.log ?? silentLog).warn('operation failed in the database', {
    requestId: trace.requestId,
    journalId,
    vltyp: operation.vltyp,
    errorMessage: error.message,
    endedTransaction: error.endedTransaction || undefined,
  });
  if (error.endedTransaction) {
    return failedOutcome(
      journalId,
      WebApiErrorCode.operationFailed,
      `Operation ${operation.vltyp} failed: its procedure ended the service's transaction itself (a ROLLBACK or COMMIT without its own save point), so nothing of the call was kept (docs/sql-server.md, "The transaction rule for ERP procedures")`,
    );
  }
  const told = error.publicMessage ? `: ${error.publicMessage}` : '';
  return failedOutcome(
    journalId,
    WebApiErrorCode.operationFailed,
    `Operation ${operation.vltyp} failed in the database${told}`,
  );
}
