import type { Log, LogFields } from '../core/log.js';
import { processWide } from '../core/process-wide.js';

/**
 * Who made each request in progress, by its request id (CONTRACT 4d): every log line of a request
 * carries its `requestId`, and this adds its `caller`. A map rather than AsyncLocalStorage: on
 * Node 22 that hooks every promise of the process, which the driver's and the SDK's many promises
 * would pay for on every request. One per process (the local stack's packaged functions).
 */
const callers = processWide('request-callers', () => new Map<string, string>());
/** Requests in progress at once in one process: far beyond any; a leak cannot grow past it. */
const MAX_REQUESTS = 10_000;

/** Names the caller of request `requestId`: each of its log lines from now on names it too. */
export function noteCaller(requestId: string, identity: string): void {
  if (callers.size >= MAX_REQUESTS) callers.delete(callers.keys().next().value!);
  callers.set(requestId, identity);
}

/** The caller of request `requestId`, if known. */
export function callerOfRequest(requestId: string | undefined): string | undefined {
  return requestId === undefined ? undefined : callers.get(requestId);
}

/** Forgets request `requestId` once its last line (the summary) is written. */
export function endRequest(requestId: string | undefined): void {
  if (requestId !== undefined) callers.delete(requestId);
}

const wrapped = new WeakMap<Log, Log>();

/** `log` adding the request's caller to every line that names a request whose caller is known. */
export function withRequestFields(log: Log): Log {
  let found = wrapped.get(log);
  if (!found) {
    const fields = (given: LogFields | undefined): LogFields | undefined => {
      if (callers.size === 0 || given === undefined || given.caller !== undefined) return given;
      const requestId = given.requestId;
      const caller = typeof requestId === 'string' ? callers.get(requestId) : undefined;
      return caller === undefined ? given : { ...given, caller };
    };
    found = {
      debug: (message, given) => log.debug(message, fields(given)),
      info: (message, given) => log.info(message, fields(given)),
      warn: (message, given) => log.warn(message, fields(given)),
      error: (message, given) => log.error(message, fields(given)),
    };
    wrapped.set(log, found);
  }
  return found;
}
