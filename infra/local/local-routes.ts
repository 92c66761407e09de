import { docsLocalRoutes } from './docs-routes.js';
import { erpLocalRoutes } from './erp-routes.js';
import { type LocalRoute, type LocalRouteContext, sendJson } from './local-http.js';
import { recentSpansOf } from './recent-traces.js';
import { webhookLocalRoutes } from './webhook-routes.js';

/** Routes served only by the local stack, only on loopback, keyed `METHOD /path`. */
export function createLocalRoutes(context: LocalRouteContext): Map<string, LocalRoute> {
  return new Map<string, LocalRoute>([
    [
      'GET /health',
      async (_request, response) => {
        const open = context.databaseOpen
          ? await context.databaseOpen()
          : await context.database.query('SELECT 1').then(
              () => true,
              () => false,
            );
        if (!open) return sendJson(response, 503, { status: 'database unavailable' });
        sendJson(response, 200, { status: 'ok' });
      },
    ],
    [
      'GET /_local/traces',
      async (_request, response, target) => {
        // A trace id, or a whole traceparent (an answer's header as copied).
        const asked = (target.searchParams.get('traceId') ?? '').trim().toLowerCase();
        const traceId = /^(?:[0-9a-f]{2}-)?([0-9a-f]{32})(?:-|$)/.exec(asked)?.[1];
        if (!traceId)
          return sendJson(response, 400, { message: '"traceId" must be 32 hex digits or a traceparent' });
        const spans = recentSpansOf(traceId);
        if (!spans) {
          return sendJson(response, 404, {
            message: 'Spans are kept only by npm start (infra/local/main.ts)',
          });
        }
        sendJson(response, 200, {
          traceId,
          spans: spans.map((span) => ({
            name: span.name,
            kind: span.kind,
            spanId: span.context.spanId,
            ...(span.context.parentSpanId ? { parentSpanId: span.context.parentSpanId } : {}),
            startTime: new Date(span.startTime).toISOString(),
            durationMs: Math.round((span.endTime - span.startTime) * 1000) / 1000,
            ...(span.failed ? { failed: true } : {}),
            attributes: span.attributes ?? {},
            ...(span.links?.length ? { links: span.links } : {}),
          })),
        });
      },
    ],
    ...webhookLocalRoutes(context),
    ...erpLocalRoutes(context),
    ...docsLocalRoutes(),
  ]);
}
