import { readFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { findTenant } from '../../shared/config/tenant-registry.js';
import { type LocalRoute, sendBytes, sendJson } from './local-http.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The API reference: the one OpenAPI document of the service. */
export const OPENAPI_FILE = join(ROOT, 'docs', 'openapi.yaml');
const SWAGGER_UI = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** docs/openapi.yaml as an object. */
export async function readOpenApiDocument(): Promise<Record<string, unknown>> {
  return parse(await readFile(OPENAPI_FILE, 'utf8')) as Record<string, unknown>;
}

/** swagger-ui-dist's files the page loads, all from node_modules: the page needs no network. */
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

// validatorUrl null: Swagger UI would otherwise send the document to validator.swagger.io.
const page = (title: string, documentUrl: string) => `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>${title}</title>
  <link rel="stylesheet" href="/docs/swagger-ui.css">
  <link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script>
    window.ui = SwaggerUIBundle({
      url: '${documentUrl}',
      dom_id: '#swagger-ui',
      deepLinking: true,
      validatorUrl: null,
      docExpansion: 'list',
      presets: [SwaggerUIBundle.presets.apis],
    });
  </script>
</body>
</html>
`;
const PAGE = page('ERP integration gateway: API reference', '/openapi.json');

function send(response: Parameters<LocalRoute>[1], contentType: string, body: string | Buffer): void {
  sendBytes(response, 200, { 'content-type': contentType }, body);
}

/** The document with this stack's own URL as its first server, so that "Try it out" calls it. */
async function servedDocument(request: IncomingMessage): Promise<Record<string, unknown>> {
  const document = await readOpenApiDocument();
  const servers = (document.servers as { url: string }[] | undefined) ?? [];
  const here = { url: `http://${request.headers.host ?? '127.0.0.1'}`, description: 'This local stack' };
  return {
    ...document,
    servers: [here, ...servers.filter((server) => !server.url.startsWith('http://127.0.0.1'))],
  };
}

const TENANT_DOCS = /^\/docs\/([a-z0-9][a-z0-9-]{0,62})$/;

/**
 * `GET /docs/{tenant}`: the tenant's own description (`/{tenant}/JsonAPI/openapi.json`: its tables,
 * views and columns) as an interactive page, as `/docs` shows the service's. The description asks
 * for the tenant's Data API user (HTTP Basic): the browser asks for it once. A tenant the registry
 * does not know is 404, as its routes are (no page that could only fail).
 */
export function tenantDocsRoute(): {
  match: (method: string | undefined, pathname: string) => LocalRoute | undefined;
} {
  return {
    match(method, pathname) {
      const tenant = method === 'GET' ? TENANT_DOCS.exec(pathname)?.[1] : undefined;
      if (!tenant || tenant in ASSETS) return undefined;
      return async (_request, response) => {
        if (!(await findTenant(tenant))) {
          return sendJson(response, 404, {
            error: { code: 'tenant_not_found', message: `Tenant "${tenant}" does not exist` },
          });
        }
        send(
          response,
          'text/html; charset=utf-8',
          page(`ERP integration gateway: tables and views of ${tenant}`, `/${tenant}/JsonAPI/openapi.json`),
        );
      };
    },
  };
}

/** `GET /openapi.json`, `GET /docs` (Swagger UI) and the page's assets. */
export function docsLocalRoutes(): [string, LocalRoute][] {
  return [
    [
      'GET /openapi.json',
      async (request, response) => sendJson(response, 200, await servedDocument(request)),
    ],
    ['GET /docs', async (_request, response) => send(response, 'text/html; charset=utf-8', PAGE)],
    ...Object.entries(ASSETS).map(([file, contentType]): [string, LocalRoute] => [
      `GET /docs/${file}`,
      async (_request, response) => send(response, contentType, await readFile(join(SWAGGER_UI, file))),
    ]),
  ];
}
