import { createPowertoolsLog, type LogFormat } from '../adapters/powertools/log.js';
import { createEmfMetrics } from '../adapters/powertools/metrics.js';
import { ConfigurationError } from '../config/settings.js';
import type { Log } from '../core/log.js';
import type { ServiceMetrics } from '../core/metrics.js';

let log: Log | undefined;
let metrics: ServiceMetrics | undefined;

/** `LOG_FORMAT`: `json` (the default, what CloudWatch Logs Insights reads) or `text` (the local stack). */
export function logFormatFromEnv(): LogFormat {
  const raw = process.env.LOG_FORMAT?.trim().toLowerCase();
  if (!raw || raw === 'json') return 'json';
  if (raw === 'text') return 'text';
  throw new ConfigurationError(`LOG_FORMAT must be "json" or "text", got "${process.env.LOG_FORMAT}"`);
}

/** The one log of this process, created on first use. */
export function serviceLog(): Log {
  log ??= createPowertoolsLog(logFormatFromEnv());
  return log;
}

/** The one metrics emitter of this process (EMF on stdout), created on first use. */
export function serviceMetrics(): ServiceMetrics {
  metrics ??= createEmfMetrics();
  return metrics;
}

/** Replaces the log or the metrics of this process: the local stack and tests. */
export function useObservability(replacement: { log?: Log; metrics?: ServiceMetrics }): void {
  if (replacement.log) log = replacement.log;
  if (replacement.metrics) metrics = replacement.metrics;
}

/** `2xx`, `4xx`, `5xx`… */
export const statusClass = (status: number) => `${Math.floor(status / 100)}xx`;
