import type { IncomingMessage, ServerResponse } from 'node:http';
import { createEmfMetrics } from '../../shared/adapters/powertools/metrics.js';
import { serviceLog, useObservability } from '../../shared/lambda/observability.js';

/**
 * The development server's line per request, once the answer is sent: `GET /path 200 12 ms` (or
 * a JSON `access` line with LOG_FORMAT=json). The path only: a query may be long.
 */
export function logAccess(request: IncomingMessage, response: ServerResponse): void {
  const started = performance.now();
  response.once('close', function logAnswered() {
    serviceLog().info('access', {
      method: request.method,
      path: new URL(request.url ?? '/', 'http://localhost').pathname,
      status: response.writableFinished ? response.statusCode : 'aborted',
      durationMs: Math.round(performance.now() - started),
    });
  });
}

/** Locally the EMF documents would drown the console: they go to the log at DEBUG instead. */
export function routeMetricsToDebugLog(): void {
  useObservability({
    metrics: createEmfMetrics({
      sink: (document) => serviceLog().debug('metrics', { emf: JSON.parse(document) as unknown }),
    }),
  });
}
