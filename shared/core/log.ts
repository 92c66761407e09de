/** Fields of a log entry: plain values; the logger redacts any that look like a secret. */
export type LogFields = Readonly<Record<string, unknown>>;

/** The service's log, as the core sees it (the Powertools adapter writes it as JSON lines). */
export interface Log {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/** A log that drops everything: the default where a caller passes none (unit tests of the core). */
export const silentLog: Log = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

/** `log` with `fields` on every line (a line's own fields win): a record's trace id, say. */
export function logWith(log: Log, fields: LogFields): Log {
  return {
    debug: (message, own) => log.debug(message, { ...fields, ...own }),
    info: (message, own) => log.info(message, { ...fields, ...own }),
    warn: (message, own) => log.warn(message, { ...fields, ...own }),
    error: (message, own) => log.error(message, { ...fields, ...own }),
  };
}

/** What is safe to log of an error: its name, message and the chain of causes (never a stack of secrets). */
export function describeError(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) {
    // SDK and driver errors are sometimes plain objects: their name and message, not `[object Object]`.
    const { name, message, code } = (typeof error === 'object' && error ? error : {}) as Record<
      string,
      unknown
    >;
    if (typeof message === 'string') return { error: String(name ?? code ?? 'Error'), errorMessage: message };
    return { error: String(error) };
  }
  const described: Record<string, unknown> = { error: error.name, errorMessage: error.message };
  if (error.cause !== undefined && error.cause !== error) described.cause = describeError(error.cause);
  return described;
}
