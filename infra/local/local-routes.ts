import { docsLocalRoutes } from './docs-routes.js';
import { erpLocalRoutes } from './erp-routes.js';
import { type LocalRoute, type LocalRouteContext, sendJson } from './local-http.js';
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
    ...webhookLocalRoutes(context),
    ...erpLocalRoutes(context),
    ...docsLocalRoutes(),
  ]);
}
