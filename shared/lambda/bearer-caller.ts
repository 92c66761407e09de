import { createHash } from 'node:crypto';
import type { TrustedIssuer, VerifiedToken } from '../adapters/jose/access-tokens.js';
import { KeySetUnavailableError, TokenRejectedError } from '../adapters/jose/token-keys.js';
import { getSettings } from '../config/settings.js';
import type { TenantConfig } from '../config/tenants.js';
import type { Caller } from '../core/auth/caller.js';
import { secretFingerprint } from '../core/auth/client-credentials.js';
import { ServiceError } from '../core/errors.js';
import { describeError } from '../core/log.js';
import { processWide } from '../core/process-wide.js';
import type { HttpRequest, TenantRequestContext } from './request-context.js';
import { ownKeySet, tenantBaseUrl } from './token-issuer.js';

// The bearer half of the Data API's sign-in (caller-auth.ts), in a module of its own so that it is
// loaded with the first bearer token an instance sees: Basic-only traffic never parses it.

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

/**
 * The caller of a request with `Authorization: Bearer …` (CONTRACT 4d): a token of an issuer the
 * tenant trusts, verified (jose with the first token that is not remembered); else 401
 * `invalid_token`, its reason in the log.
 */
export async function bearerCaller(ctx: TenantRequestContext, header: string): Promise<Caller> {
  const { tenant, request } = ctx;
  const token = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header)?.[1];
  if (token === undefined) throw invalidToken(tenant);
  const trusted = trustedIssuers(tenant, request);
  const key = trustDigest(token, trusted);
  const now = Date.now();
  let verified = rememberedTokens.get(key);
  if (!verified || verified.until <= now) {
    try {
      // jose with the first token the instance verifies (token-keys.ts).
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
        ctx.log.warn('identity provider keys unavailable', {
          requestId: ctx.requestId,
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
      ctx.log.info('bearer token refused', {
        requestId: ctx.requestId,
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
    ctx.log.info('bearer token refused', {
      requestId: ctx.requestId,
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
