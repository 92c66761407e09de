import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Log, LogFields } from '../../shared/core/log.js';
import { parseTraceparent, TRACEPARENT } from '../../shared/core/trace-context.js';
import { serviceLog } from '../../shared/lambda/observability.js';
import { parseRequestTarget } from './local-http.js';

/**
 * What the access line adds of a function's answer: the request id the gateway gave its invocation
 * (an error body's `requestId`, the Web API's `x-request-id`), and the error code of the function's
 * own `request` line. In Lambda both are in the function's log lines, found by that id; the
 * development server shows them on its one line per request, so that an error answer's
 * `requestId` can be found in what `npm start` prints.
 */
const requestIds = new WeakMap<ServerResponse, string>();
/**
 * Error codes, callers (CONTRACT 4d) and Web API journal ids (CONTRACT 8a) of `request` lines
 * whose access line has not been written yet, by request id.
 */
const errorCodes = new Map<
  string,
  { readonly errorCode?: string; readonly caller?: string; readonly journalId?: number }
>();
/**
 * A request the gateway stopped waiting for (its time limit) logs its `request` line after its
 * access line, and nothing takes its code: the oldest go beyond this many.
 */
const MAX_PENDING_CODES = 1000;

/** What the gateway says of an invocation it could not make (HTTP API's `integrationErrorMessage`). */
const integrationErrors = new WeakMap<ServerResponse, string>();

/** The gateway could not invoke the function for `response` (Lambda throttled it). */
export function noteIntegrationError(response: ServerResponse, message: string): void {
  integrationErrors.set(response, message);
}

/** The gateway's request id for the invocation answering `response`. */
export function noteRequestId(response: ServerResponse, requestId: string): void {
  requestIds.set(response, requestId);
}

/**
 * `log`, noting the error code of each `request` line (shared/lambda/http.ts) for the access line
 * of the same request. The functions log through the process's one log (even packaged, see
 * shared/core/process-wide.ts), so the local stack puts this one in place.
 */
export function notingErrorCodes(log: Log): Log {
  const note = (message: string, fields: LogFields | undefined) => {
    if (message !== 'request' || typeof fields?.requestId !== 'string') return;
    if (fields.errorCode === undefined && fields.caller === undefined && fields.journalId === undefined)
      return;
    errorCodes.set(fields.requestId, {
      errorCode: fields.errorCode === undefined ? undefined : String(fields.errorCode),
      caller: fields.caller === undefined ? undefined : String(fields.caller),
      journalId: typeof fields.journalId === 'number' ? fields.journalId : undefined,
    });
    if (errorCodes.size > MAX_PENDING_CODES) errorCodes.delete(errorCodes.keys().next().value!);
  };
  return {
    debug: (message, fields) => log.debug(message, fields),
    info: (message, fields) => {
      note(message, fields);
      log.info(message, fields);
    },
    warn: (message, fields) => log.warn(message, fields),
    error: (message, fields) => log.error(message, fields),
  };
}

/**
 * The development server's line per request, once the answer is sent: `GET /path 200 12 ms`, with
 * `requestId=…` when a function answered, `errorCode=…` when it answered an error and `traceId=…`
 * of the answer's `traceparent` (CONTRACT 8a: the function's span, or the stack's for its own
 * routes), so that the line is found by the id an integrator quotes (or a JSON `access` line with
 * LOG_FORMAT=json). The path only: a query may be long.
 */
export function logAccess(request: IncomingMessage, response: ServerResponse): void {
  const started = performance.now();
  response.once('close', function logAnswered() {
    const requestId = requestIds.get(response);
    const noted = requestId === undefined ? undefined : errorCodes.get(requestId);
    if (requestId !== undefined) errorCodes.delete(requestId);
    serviceLog().info('access', {
      method: request.method,
      // Total: a request-target no URL parser takes must not throw here, after the answer.
      path: parseRequestTarget(request.url)?.pathname ?? '(invalid request-target)',
      status: response.writableFinished ? response.statusCode : 'aborted',
      durationMs: Math.round(performance.now() - started),
      requestId,
      errorCode: noted?.errorCode,
      caller: noted?.caller,
      journalId: noted?.journalId,
      traceId: traceIdOf(response.getHeader(TRACEPARENT)),
      integrationError: integrationErrors.get(response),
    });
  });
}

/** The trace id of an answer's `traceparent`, where it has one. */
const traceIdOf = (header: number | string | string[] | undefined) =>
  typeof header === 'string' ? parseTraceparent(header)?.traceId : undefined;
