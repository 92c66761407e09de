import type { JSONWebKeySet } from 'jose';
import { publicJwk } from '../adapters/jose/token-keys.js';
import { getSettings } from '../config/settings.js';
import { type TenantConfig, tokenSigningAlgorithm } from '../config/tenants.js';
import type { HttpRequest } from './request-context.js';

// The gateway as a tenant's token issuer (CONTRACT 4d): the address its tokens name, and the keys
// it publishes; what the token endpoint, the descriptions and the bearer check (bearer-caller.ts) share.

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
