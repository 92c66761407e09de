import { AsyncLocalStorage } from 'node:async_hooks';
import type { Log, LogFields } from '../core/log.js';

/** What every log line of a request carries once it is known: who called (CONTRACT 4d). */
interface RequestScope {
  caller?: string;
}

const scopes = new AsyncLocalStorage<RequestScope>();

/** Runs `work` (one invocation: its middlewares, route and log lines) in a scope of its own. */
export function inRequestScope<T>(work: () => T): T {
  return scopes.run({}, work);
}

/** Names the caller of the request in progress: each log line after this one names it too. */
export function noteCaller(identity: string): void {
  const scope = scopes.getStore();
  if (scope) scope.caller = identity;
}

/** The caller of the request in progress, if known. */
export function currentCaller(): string | undefined {
  return scopes.getStore()?.caller;
}

const wrapped = new WeakMap<Log, Log>();

/** `log` adding the request's caller to every line written within a request's scope. */
export function withRequestFields(log: Log): Log {
  let found = wrapped.get(log);
  if (!found) {
    const fields = (given: LogFields | undefined): LogFields | undefined => {
      const caller = scopes.getStore()?.caller;
      return caller === undefined || given?.caller !== undefined ? given : { ...given, caller };
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
