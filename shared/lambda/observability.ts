import { createPowertoolsLog, type LogFormat } from '../adapters/powertools/log.js';
import { createEmfMetrics, type EmfSink, writeToStdout } from '../adapters/powertools/metrics.js';
import { ConfigurationError } from '../config/settings.js';
import type { DatabasePermissionError } from '../core/database.js';
import type { Log } from '../core/log.js';
import type { ServiceMetrics } from '../core/metrics.js';
import { reportPermissionDenied as reportInCore } from '../core/permission-denied.js';
import { processWide } from '../core/process-wide.js';

/** One per process (shared/core/process-wide.ts): what the local stack and tests put in place reaches its packaged functions. */
const observability = processWide('observability', () => ({
  log: undefined as Log | undefined,
  metrics: undefined as ServiceMetrics | undefined,
}));

/** `LOG_FORMAT`: `json` (the default, what CloudWatch Logs Insights reads) or `text` (the local stack). */
export function logFormatFromEnv(): LogFormat {
  const raw = process.env.LOG_FORMAT?.trim().toLowerCase();
  if (!raw || raw === 'json') return 'json';
  if (raw === 'text') return 'text';
  throw new ConfigurationError(`LOG_FORMAT must be "json" or "text", got "${process.env.LOG_FORMAT}"`);
}

/** The one log of this process, created on first use. */
export function serviceLog(): Log {
  observability.log ??= createPowertoolsLog(logFormatFromEnv());
  return observability.log;
}

/**
 * Where EMF documents go: stdout in Lambda (where CloudWatch Logs turns them into metrics);
 * elsewhere (the local stack, tests calling handlers) they would only flood the console, so they
 * go to the log at DEBUG.
 */
export function defaultEmfSink(): EmfSink {
  if (process.env.AWS_LAMBDA_FUNCTION_NAME) return writeToStdout;
  return (document) => serviceLog().debug('metrics', { emf: JSON.parse(document) as unknown });
}

/** The one metrics emitter of this process, created on first use. */
export function serviceMetrics(): ServiceMetrics {
  observability.metrics ??= createEmfMetrics({ sink: defaultEmfSink() });
  return observability.metrics;
}

/** Whether `log` is the one in place (as given to {@link useObservability}). */
export function isServiceLog(log: Log): boolean {
  return observability.log === log;
}

/** Replaces the log or the metrics of this process: the local stack and tests. */
export function useObservability(replacement: { log?: Log; metrics?: ServiceMetrics }): void {
  if (replacement.log) observability.log = replacement.log;
  if (replacement.metrics) observability.metrics = replacement.metrics;
}

/** `2xx`, `4xx`, `5xx`… */
export const statusClass = (status: number) => `${Math.floor(status / 100)}xx`;

/**
 * When `error` is (or wraps) a missing database permission: its log line and metric, through `log`
 * (a request's, or this process's) and this process's metrics (shared/core/permission-denied.ts).
 * Answers the permission error, or undefined when it was none.
 */
export function reportPermissionDenied(
  error: unknown,
  fields: Readonly<Record<string, unknown>>,
  log: Log = serviceLog(),
): DatabasePermissionError | undefined {
  return reportInCore(error, fields, log, serviceMetrics());
}
