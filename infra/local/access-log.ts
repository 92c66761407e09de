import type { IncomingMessage, ServerResponse } from 'node:http';
import { serviceLog } from '../../shared/lambda/observability.js';
import { parseRequestTarget } from './local-http.js';

/**
 * The development server's line per request, once the answer is sent: `GET /path 200 12 ms` (or
 * a JSON `access` line with LOG_FORMAT=json). The path only: a query may be long.
 */
export function logAccess(request: IncomingMessage, response: ServerResponse): void {
  const started = performance.now();
  response.once('close', function logAnswered() {
    serviceLog().info('access', {
      method: request.method,
      // Total: a request-target no URL parser takes must not throw here, after the answer.
      path: parseRequestTarget(request.url)?.pathname ?? '(invalid request-target)',
      status: response.writableFinished ? response.statusCode : 'aborted',
      durationMs: Math.round(performance.now() - started),
    });
  });
}
