import { createHash } from 'node:crypto';
import type { TenantConfig } from '../config/tenants.js';
import { ServiceError } from '../core/errors.js';
import { verifyPassword } from '../core/passwords.js';
import { processWide } from '../core/process-wide.js';

const MAX_REMEMBERED = 1000;
/**
 * Verified secrets of this warm process (Data API passwords, OAuth client secrets): scrypt costs
 * ~55 ms, so it runs once per credential. One per process (the local stack's packaged functions).
 */
const remembered = processWide(
  'verified-credentials',
  () => new Map<string, { readonly until: number; readonly hash: string }>(),
);
// Unknown users still pay for one scrypt, so response time does not tell which users exist.
const DUMMY_HASH = 'scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=';

/**
 * The one of `hashes` that `secret` matches, or undefined (none given: an unknown name, which costs
 * a scrypt all the same). A match is remembered for `cacheMs` under the hashes as the registry has
 * them now and what was presented: a rotated secret (new hashes) or a removed name is checked anew
 * with the registry's next read, never answered from memory.
 */
export async function verifySecretRemembered(
  scope: string,
  hashes: readonly string[] | undefined,
  presented: string,
  secret: string,
  cacheMs: number,
): Promise<string | undefined> {
  const key = createHash('sha256')
    .update(scope)
    .update('\0')
    .update((hashes ?? []).join('\0'))
    .update('\0')
    .update(presented)
    .digest('base64');
  const now = Date.now();
  const known = remembered.get(key);
  if (hashes && known !== undefined && known.until > now) return known.hash;
  let matched: string | undefined;
  if (!hashes || hashes.length === 0) await verifyPassword(secret, DUMMY_HASH);
  else {
    // Each hash is tried (two during a rotation): which one matched is not told by the time taken.
    for (const hash of hashes) if (await verifyPassword(secret, hash)) matched ??= hash;
  }
  if (matched !== undefined && cacheMs > 0) {
    if (remembered.size >= MAX_REMEMBERED) remembered.delete(remembered.keys().next().value!);
    remembered.set(key, { until: now + cacheMs, hash: matched });
  }
  return matched;
}

/** 401 with the tenant's challenges: Basic (where it is allowed) and Bearer (CONTRACT 4d). */
export function unauthorized(tenant: TenantConfig, message: string, code = 'unauthorized'): ServiceError {
  const challenges: string[] = [];
  if (tenant.dataApiAuth.includes('basic')) challenges.push(`Basic realm="${tenant.id}", charset="UTF-8"`);
  if (tenant.dataApiAuth.includes('bearer')) challenges.push(`Bearer realm="${tenant.id}"`);
  return new ServiceError(401, code, message, { headers: { 'www-authenticate': challenges.join(', ') } });
}

/** Checks HTTP Basic credentials against the tenant's Data API users; returns the user name. */
export async function requireBasicAuth(
  tenant: TenantConfig,
  header: string | undefined,
  cacheMs: number,
): Promise<string> {
  if (!header)
    throw unauthorized(tenant, 'Authentication required: send HTTP Basic credentials or a bearer token');
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  const decoded = match ? Buffer.from(match[1]!, 'base64').toString('utf8') : '';
  const colon = decoded.indexOf(':');
  if (colon < 0)
    throw unauthorized(tenant, 'Malformed Authorization header: expected Basic <base64(user:password)>');
  const name = decoded.slice(0, colon);
  const password = decoded.slice(colon + 1);
  const user = tenant.dataApiUsers.find((u) => u.name === name);
  const matched = await verifySecretRemembered(
    `${tenant.id}\0user`,
    user && [user.passwordHash],
    header,
    password,
    cacheMs,
  );
  if (!user || matched === undefined) throw unauthorized(tenant, 'Invalid user name or password');
  return name;
}

/** Forgets remembered credentials (tests, and after a registry change). */
export function forgetCredentials(): void {
  remembered.clear();
}
