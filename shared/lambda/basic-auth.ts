import { createHash } from 'node:crypto';
import type { TenantConfig } from '../config/tenants.js';
import { ServiceError } from '../core/errors.js';
import { verifyPassword } from '../core/passwords.js';

const MAX_REMEMBERED = 1000;
/** Verified credentials of this warm process: scrypt costs ~55 ms, so it runs once per credential. */
const remembered = new Map<string, number>();
// Unknown users still pay for one scrypt, so response time does not tell which users exist.
const DUMMY_HASH = 'scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=';

function unauthorized(tenant: TenantConfig, message: string): ServiceError {
  return new ServiceError(401, 'unauthorized', message, {
    headers: { 'www-authenticate': `Basic realm="${tenant.id}", charset="UTF-8"` },
  });
}

/** Checks HTTP Basic credentials against the tenant's Data API users; returns the user name. */
export async function requireBasicAuth(
  tenant: TenantConfig,
  header: string | undefined,
  cacheMs: number,
): Promise<string> {
  if (!header) throw unauthorized(tenant, 'Authentication required: send HTTP Basic credentials');
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  const decoded = match ? Buffer.from(match[1]!, 'base64').toString('utf8') : '';
  const colon = decoded.indexOf(':');
  if (colon < 0)
    throw unauthorized(tenant, 'Malformed Authorization header: expected Basic <base64(user:password)>');
  const name = decoded.slice(0, colon);
  const password = decoded.slice(colon + 1);

  const user = tenant.dataApiUsers.find((u) => u.name === name);
  // Remembered with the user's hash as the registry has it now: a rotated password (a new hash)
  // or a removed user is checked anew with the registry's next read, never answered from memory.
  const key = createHash('sha256')
    .update(tenant.id)
    .update('\0')
    .update(user?.passwordHash ?? '')
    .update('\0')
    .update(header)
    .digest('base64');
  const now = Date.now();
  const until = remembered.get(key);
  if (user && until !== undefined && until > now) return name;

  const valid = await verifyPassword(password, user?.passwordHash ?? DUMMY_HASH);
  if (!user || !valid) throw unauthorized(tenant, 'Invalid user name or password');
  if (cacheMs > 0) {
    if (remembered.size >= MAX_REMEMBERED) remembered.delete(remembered.keys().next().value!);
    remembered.set(key, now + cacheMs);
  }
  return name;
}

/** Forgets remembered credentials (tests, and after a registry change). */
export function forgetCredentials(): void {
  remembered.clear();
}
