import { getSettings } from '../config/settings.js';
import { type Caller, callerIdentity } from '../core/auth/caller.js';
import { requireBasicAuth, unauthorized } from './basic-auth.js';
import type { CallerRequestContext, TenantRequestContext } from './request-context.js';

/**
 * The caller of a Data API request (CONTRACT 4d): HTTP Basic against the tenant's users, or a
 * bearer token of an issuer it trusts, as its `dataApiAuth` allows. From now on the request's
 * route sees the caller, and its log lines name it.
 */
export async function authenticateCaller(ctx: TenantRequestContext): Promise<CallerRequestContext> {
  const { tenant } = ctx;
  const header = ctx.request.headers.authorization;
  let caller: Caller;
  if (header !== undefined && /^Bearer(\s|$)/i.test(header)) {
    if (!tenant.dataApiAuth.includes('bearer')) {
      throw unauthorized(tenant, 'This tenant accepts HTTP Basic credentials only');
    }
    // The bearer half with the first bearer token: Basic-only traffic never parses it.
    const { bearerCaller } = await import('./bearer-caller.js');
    caller = await bearerCaller(ctx, header);
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
  return ctx.setCaller(caller, callerIdentity(caller));
}
