import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { readOpenApiDocument } from '../../infra/local/docs-routes.js';
import { lambdaRoutes } from '../../infra/local/routes.js';

const document = await readOpenApiDocument();
const paths = document.paths as Record<string, Record<string, { responses?: Record<string, unknown> }>>;
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];
const operations = Object.entries(paths).flatMap(([path, item]) =>
  Object.keys(item)
    .filter((method) => METHODS.includes(method))
    .map((method) => ({ method: method.toUpperCase(), path, operation: item[method]! })),
);

describe('docs/openapi.yaml', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(document as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it("documents exactly serverless.yml's HTTP routes", () => {
    const deployed = lambdaRoutes().map((route) => `${route.method} ${route.path}`);
    const documented = operations.map((op) => `${op.method} ${op.path}`);
    expect(documented.sort()).toEqual(deployed.sort());
  });

  it('gives every operation its success and its errors: 400 (where it takes input), 401, 404 and 503 at least', () => {
    for (const { method, path, operation } of operations) {
      // The authorization server (CONTRACT 4d) opens no database: no 503. Its published documents
      // are public: no 401.
      if (path === '/{tenant}/oauth2/token') {
        expect(Object.keys(operation.responses ?? {})).toEqual(
          expect.arrayContaining(['200', '400', '401', '404']),
        );
        continue;
      }
      if (path.startsWith('/{tenant}/.well-known/') || path.startsWith('/.well-known/')) {
        expect(Object.keys(operation.responses ?? {})).toEqual(expect.arrayContaining(['200', '404']));
        continue;
      }
      // The per-tenant description and a subscription's own routes take nothing but the tenant and
      // the id (an id that is not one is 404): nothing in them can be malformed.
      const takesInput =
        path !== '/{tenant}/JsonAPI/openapi.json' &&
        !(
          path.startsWith('/{tenant}/JsonAPI/Subscriptions') &&
          !(method === 'POST' && path.endsWith('Subscriptions'))
        );
      const success =
        method === 'DELETE' ? '204' : path.endsWith('Subscriptions') && method === 'POST' ? '201' : '200';
      expect(Object.keys(operation.responses ?? {}), `${method} ${path}`).toEqual(
        expect.arrayContaining([success, ...(takesInput ? ['400'] : []), '401', '404', '503']),
      );
    }
  });

  it('documents the 303 to S3 of every route whose answer can be too large for a Lambda response', () => {
    const redirecting = operations
      .filter(({ operation }) => '303' in (operation.responses ?? {}))
      .map(({ method, path }) => `${method} ${path}`)
      .sort();
    expect(redirecting).toEqual([
      'GET /{tenant}/JsonAPI/Data/getChanges/{dataSource}',
      'GET /{tenant}/JsonAPI/Data/getData/{dataSource}',
      'GET /{tenant}/JsonAPI/Data/getDataPaginate/{dataSource}',
      'GET /{tenant}/JsonAPI/Data/getDataWithCondition/{dataSource}',
      'GET /{tenant}/JsonAPI/File/getFile/{fileGUID}',
      'POST /{tenant}/WebAPI/getData',
      'POST /{tenant}/WebAPI/getDataAsync',
    ]);
  });

  it('declares HTTP Basic and the x-api-key / x-svc-signature headers as security schemes', () => {
    const schemes = (document.components as { securitySchemes: Record<string, Record<string, string>> })
      .securitySchemes;
    expect(schemes.basicAuth).toMatchObject({ type: 'http', scheme: 'basic' });
    expect(schemes.apiKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'x-api-key' });
    expect(schemes.signature).toMatchObject({ type: 'apiKey', in: 'header', name: 'x-svc-signature' });
  });
});
