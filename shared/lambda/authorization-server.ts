import { joseTokenIssuer } from '../adapters/jose/access-tokens.js';
import { getSettings } from '../config/settings.js';
import { type TenantConfig, tokenSigningAlgorithm } from '../config/tenants.js';
import { SCOPES } from '../core/auth/caller.js';
import { grantClientCredentials, OAuthError } from '../core/auth/client-credentials.js';
import { notFound } from '../core/errors.js';
import { verifySecretRemembered } from './basic-auth.js';
import { answerableError, renderDataApiError } from './data-api-errors.js';
import { httpHandler, type RenderedError } from './http.js';
import type { HttpRequest, HttpResponse } from './request-context.js';
import { type TenantRoute, tenantRoute } from './tenant.js';
import { ownKeySet, tenantBaseUrl } from './token-issuer.js';

const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };

/** `route` for a tenant whose authorization server the gateway is (it has `oauthClients`); else 404. */
function authorizationServerRoute(route: TenantRoute) {
  return tenantRoute(async function ownClientsRoute(ctx) {
    const { tenant } = ctx;
    if (tenant.oauthClients.length === 0 || tenant.tokenSigningKeys.length === 0) {
      throw notFound(
        'authorization_server_not_configured',
        `Tenant "${tenant.id}" has no OAuth 2.0 clients of the gateway: its tokens come from its own identity provider, if any`,
      );
    }
    return route(ctx);
  });
}

/**
 * The token endpoint's errors as RFC 6749 section 5.2 (`{"error","error_description"}`, what
 * OAuth 2.0 client libraries read), with the request's id; `invalid_client` 401 with
 * `WWW-Authenticate: Basic`. Anything else (429, 404, 503) in the same shape with the service's code.
 */
export function renderTokenError(
  thrown: unknown,
  _request: HttpRequest | undefined,
  requestId: string,
): RenderedError {
  if (thrown instanceof OAuthError) {
    return {
      code: thrown.error,
      response: {
        status: thrown.status,
        headers: {
          'content-type': 'application/json; charset=utf-8',
          ...NO_STORE,
          ...(thrown.status === 401 ? { 'www-authenticate': 'Basic realm="oauth2", charset="UTF-8"' } : {}),
        },
        body: JSON.stringify({
          error: thrown.error,
          error_description: thrown.description,
          request_id: requestId,
        }),
      },
    };
  }
  const { error, message } = answerableError(thrown);
  return {
    code: error.code,
    response: {
      status: error.status,
      headers: { 'content-type': 'application/json; charset=utf-8', ...NO_STORE, ...error.headers },
      body: JSON.stringify({ error: error.code, error_description: message, request_id: requestId }),
    },
  };
}

const json = (body: unknown, headers: Record<string, string>): HttpResponse => ({
  status: 200,
  headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  body: JSON.stringify(body),
});

/** `POST /{tenant}/oauth2/token`: the client credentials grant (CONTRACT 4d). */
const tokenRoute: TenantRoute = async (ctx) => {
  const { tenant, request } = ctx;
  const [signingKey] = tenant.tokenSigningKeys;
  const answer = await grantClientCredentials(
    {
      clients: tenant.oauthClients,
      baseUrl: tenantBaseUrl(request, tenant),
      lifetimeSeconds: tenant.tokenLifetimeSeconds,
      checkSecret: (client, secret) =>
        verifySecretRemembered(
          `${tenant.id}\0client\0${client?.clientId ?? ''}`,
          client?.secretHashes,
          secret,
          secret,
          getSettings().credentialCacheMs,
        ),
      issuer: joseTokenIssuer(signingKey!, tokenSigningAlgorithm(signingKey!) ?? 'ES256'),
      now: Date.now(),
      onClient: (clientId) => ctx.nameCaller(`client:${clientId}`),
    },
    {
      contentType: request.headers['content-type'],
      body: request.body.toString('utf8'),
      authorization: request.headers.authorization,
    },
  );
  return json(answer, NO_STORE);
};

/** RFC 8414 metadata of the tenant's authorization server. */
function metadata(request: HttpRequest, tenant: TenantConfig): Record<string, unknown> {
  const base = tenantBaseUrl(request, tenant);
  return {
    issuer: base,
    token_endpoint: `${base}/oauth2/token`,
    jwks_uri: `${base}/.well-known/jwks.json`,
    grant_types_supported: ['client_credentials'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    response_types_supported: [],
    scopes_supported: [...SCOPES],
  };
}

/**
 * The authorization server's routes, one function: `POST /{tenant}/oauth2/token`,
 * `GET /{tenant}/.well-known/jwks.json`, and the metadata at
 * `GET /.well-known/oauth-authorization-server/{tenant}` (RFC 8414 section 3.1: the well-known
 * segment before the issuer's path, where client libraries look) and at
 * `GET /{tenant}/.well-known/oauth-authorization-server`. Every route counts against the tenant's
 * fair share as every route does, and an unknown tenant is 404.
 */
export function authorizationServerHandler() {
  const token = httpHandler(authorizationServerRoute(tokenRoute), renderTokenError);
  const published = httpHandler(
    authorizationServerRoute(async function publishedRoute({ tenant, request }) {
      // Public documents: caches may keep them a while (a rotated key is published before it signs).
      const cache = { 'cache-control': 'public, max-age=300' };
      if (request.path.endsWith('/jwks.json')) return json(ownKeySet(tenant), cache);
      return json(metadata(request, tenant), cache);
    }),
    renderDataApiError,
  );
  return async function authorizationServer(...args: Parameters<typeof token>) {
    const [event] = args;
    const method = event.requestContext?.http?.method ?? 'GET';
    return method === 'POST' ? token(...args) : published(...args);
  };
}
