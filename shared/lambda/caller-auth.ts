import { createHash } from 'node:crypto';
import type { JSONWebKeySet } from 'jose';
import type { TrustedIssuer, VerifiedToken } from '../adapters/jose/access-tokens.js';
import { KeySetUnavailableError, publicJwk, TokenRejectedError } from '../adapters/jose/token-keys.js';
import { getSettings } from '../config/settings.js';
import { type TenantConfig, tokenSigningAlgorithm } from '../config/tenants.js';
import {
  type Caller,
  callerIdentity,
  requireScope,
  type Scope,
  type SourceGrant,
  type SourceScopeFamily,
  sourceGrant,
} from '../core/auth/caller.js';
import { secretFingerprint } from '../core/auth/client-credentials.js';
import { ServiceError } from '../core/errors.js';
import { describeError } from '../core/log.js';
import { processWide } from '../core/process-wide.js';
import { requireBasicAuth, unauthorized } from './basic-auth.js';
import type { HttpRequest } from './http.js';
import { serviceLog } from './observability.js';
import { noteCaller } from './request-scope.js';

/** Who made each request, once authenticated (the grants of its routes read it). */
const callers = new WeakMap<HttpRequest, Caller>();

/**
 * The service's address as the tenant's clients call it, `<base_url>` of CONTRACT 4d:
 * `PUBLIC_BASE_URL`, else the request's own scheme and host (HTTP API sets both), then `/{tenant}`.
 */
export function tenantBaseUrl(request: HttpRequest, tenant: TenantConfig): string {
  const configured = getSettings().publicBaseUrl;
  if (configured) return `${configured}/${tenant.id}`;
  const proto = (request.headers['x-forwarded-proto'] ?? 'https').split(',')[0]!.trim();
  return `${proto === 'http' ? 'http' : 'https'}://${request.headers.host ?? 'localhost'}/${tenant.id}`;
}

/** The deployment's public keys (the registry's `tokenSigningKeys`), one set per registry read. */
const ownKeySets = new WeakMap<readonly object[], JSONWebKeySet>();
export function ownKeySet(tenant: TenantConfig): JSONWebKeySet {
  let found = ownKeySets.get(tenant.tokenSigningKeys);
  if (!found) {
    found = {
      keys: tenant.tokenSigningKeys.map((jwk) => publicJwk(jwk, tokenSigningAlgorithm(jwk) ?? 'ES256')),
    };
    ownKeySets.set(tenant.tokenSigningKeys, found);
  }
  return found;
}

/** The issuers whose tokens `tenant` accepts: the gateway (when it has keys) and the registry's `tokenIssuers`. */
function trustedIssuers(tenant: TenantConfig, request: HttpRequest): TrustedIssuer[] {
  const trusted: TrustedIssuer[] = tenant.tokenIssuers.map((issuer) => ({
    issuer: issuer.issuer,
    audience: issuer.audience,
    audienceClaim: issuer.audienceClaim,
    scopePrefix: issuer.scopePrefix,
    keys: { jwksUri: issuer.jwksUri },
    scopeClaim: issuer.scopeClaim,
  }));
  if (tenant.tokenSigningKeys.length > 0) {
    const base = tenantBaseUrl(request, tenant);
    trusted.push({ issuer: base, audience: base, keys: { own: ownKeySet(tenant) }, scopeClaim: 'scope' });
  }
  return trusted;
}

const MAX_REMEMBERED_TOKENS = 1000;
/** Tokens verified in this warm process, until they expire or `CREDENTIAL_CACHE_MS`, as Basic credentials are. */
const rememberedTokens = processWide(
  'verified-tokens',
  () => new Map<string, { readonly token: VerifiedToken; readonly until: number }>(),
);

/** The trust a remembered token was verified under: a registry change checks it anew. */
function trustDigest(token: string, trusted: readonly TrustedIssuer[]): string {
  const hash = createHash('sha256').update(token);
  for (const issuer of trusted) {
    const { issuer: name, audience, audienceClaim, scopePrefix, scopeClaim } = issuer;
    hash.update('\0').update(JSON.stringify([name, audience, audienceClaim, scopePrefix, scopeClaim]));
    hash.update('\0').update('own' in issuer.keys ? JSON.stringify(issuer.keys.own) : issuer.keys.jwksUri);
  }
  return hash.digest('base64');
}

/** 401 `invalid_token` (RFC 6750 section 3.1): one description whatever part failed. */
function invalidToken(tenant: TenantConfig): ServiceError {
  return new ServiceError(401, 'invalid_token', 'The access token is not valid for this tenant', {
    headers: {
      'www-authenticate': `Bearer realm="${tenant.id}", error="invalid_token", error_description="The access token is not valid for this tenant"`,
    },
  });
}

/**
 * Why a token of the gateway's own token endpoint no longer counts, or undefined: its client was
 * removed from the registry's `oauthClients`, or the secret hash it was issued under was (the end
 * of a rotation, or an emergency stop). CONTRACT 4d: refused from the registry's next read, not
 * when the token expires. The token names its hash by a fingerprint (client-credentials.ts, why).
 */
function withdrawnClientReason(tenant: TenantConfig, token: VerifiedToken): string | undefined {
  const client = tenant.oauthClients.find((candidate) => candidate.clientId === token.client);
  if (!client) return 'its client is no longer in the registry';
  const fingerprint = token.secretFingerprint;
  if (!fingerprint || !client.secretHashes.some((hash) => secretFingerprint(hash) === fingerprint)) {
    return "the client's secret hash it was issued under is no longer in the registry";
  }
  return undefined;
}

async function bearerCaller(tenant: TenantConfig, request: HttpRequest, token: string): Promise<Caller> {
  const trusted = trustedIssuers(tenant, request);
  const key = trustDigest(token, trusted);
  const now = Date.now();
  let verified = rememberedTokens.get(key);
  if (!verified || verified.until <= now) {
    try {
      // jose with the first bearer token of the instance (token-keys.ts).
      const { verifyAccessToken } = await import('../adapters/jose/access-tokens.js');
      const checked = await verifyAccessToken(token, trusted);
      verified = {
        token: checked,
        until: Math.min(checked.expiresAt, now + getSettings().credentialCacheMs),
      };
      if (rememberedTokens.size >= MAX_REMEMBERED_TOKENS) {
        rememberedTokens.delete(rememberedTokens.keys().next().value!);
      }
      if (getSettings().credentialCacheMs > 0) rememberedTokens.set(key, verified);
    } catch (error) {
      if (error instanceof KeySetUnavailableError) {
        serviceLog().warn('identity provider keys unavailable', {
          requestId: request.requestId,
          tenant: tenant.id,
          ...describeError(error),
        });
        throw new ServiceError(
          503,
          'identity_provider_unavailable',
          "The identity provider's keys could not be fetched; try again shortly",
          { headers: { 'retry-after': '5' } },
        );
      }
      if (!(error instanceof TokenRejectedError)) throw error;
      // The reason stays in the log; the caller hears only invalid_token (RFC 6750).
      serviceLog().info('bearer token refused', {
        requestId: request.requestId,
        tenant: tenant.id,
        reason: error.message,
      });
      throw invalidToken(tenant);
    }
  }
  const { token: found } = verified;
  const ownIssuer = tenant.tokenSigningKeys.length > 0 && found.issuer === tenantBaseUrl(request, tenant);
  // Checked on every request, remembered token or not: the registry as read now decides.
  const withdrawn = ownIssuer ? withdrawnClientReason(tenant, found) : undefined;
  if (withdrawn) {
    serviceLog().info('bearer token refused', {
      requestId: request.requestId,
      tenant: tenant.id,
      reason: withdrawn,
    });
    throw invalidToken(tenant);
  }
  return {
    kind: 'bearer',
    issuer: found.issuer,
    client: found.client,
    subject: found.subject,
    ownIssuer,
    scopes: new Set(found.scopes),
  };
}

/**
 * The caller of a Data API request (CONTRACT 4d): HTTP Basic against the tenant's users, or a
 * bearer token of an issuer it trusts, as its `dataApiAuth` allows. Names the caller in the
 * request's log lines.
 */
export async function authenticateCaller(tenant: TenantConfig, request: HttpRequest): Promise<Caller> {
  const known = callers.get(request);
  if (known) return known;
  const header = request.headers.authorization;
  let caller: Caller;
  const bearer = header === undefined ? undefined : /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header);
  if (header !== undefined && /^Bearer(\s|$)/i.test(header)) {
    if (!tenant.dataApiAuth.includes('bearer')) {
      throw unauthorized(tenant, 'This tenant accepts HTTP Basic credentials only');
    }
    if (!bearer) throw invalidToken(tenant);
    caller = await bearerCaller(tenant, request, bearer[1]!);
  } else {
    if (header !== undefined && !tenant.dataApiAuth.includes('basic')) {
      throw unauthorized(
        tenant,
        'This tenant requires a bearer token (OAuth 2.0): HTTP Basic is turned off for its Data API',
        'bearer_token_required',
      );
    }
    if (header === undefined && !tenant.dataApiAuth.includes('basic')) {
      throw unauthorized(tenant, 'Authentication required: send a bearer token');
    }
    caller = { kind: 'basic', user: await requireBasicAuth(tenant, header, getSettings().credentialCacheMs) };
  }
  callers.set(request, caller);
  noteCaller(request.requestId, callerIdentity(caller));
  return caller;
}

/** The authenticated caller of `request` (after {@link authenticateCaller}). */
export function callerOf(request: HttpRequest): Caller | undefined {
  return callers.get(request);
}

/** Refuses the request's caller unless it holds `scope` (403 `insufficient_scope`). */
export function requireCallerScope(tenant: TenantConfig, request: HttpRequest, scope: Scope): void {
  const caller = callers.get(request);
  if (caller) requireScope(caller, tenant.id, scope);
}

/** What the request's caller may do with sources of `family`; undefined for a Basic user (everything). */
export function callerGrant(
  tenant: TenantConfig,
  request: HttpRequest,
  family: SourceScopeFamily,
): SourceGrant | undefined {
  const caller = callers.get(request);
  return caller && caller.kind === 'bearer' ? sourceGrant(caller, tenant.id, family) : undefined;
}
