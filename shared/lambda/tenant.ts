import { findTenant } from '../config/tenant-registry.js';
import { notFound } from '../core/errors.js';
import { afterAnswer } from './after-answer.js';
import type { Route } from './http.js';
import type { HttpResponse, TenantRequestContext } from './request-context.js';
import { admitTenantRequest, type SlotRelease } from './tenant-admission.js';

/** A route of a tenant: it runs once the tenant the path names is known and admitted. */
export type TenantRoute = (ctx: TenantRequestContext) => Promise<HttpResponse>;

/**
 * `route` for the tenant named by the first path segment: 404 when the registry does not know it,
 * 429 when the request is over the tenant's fair share (before anything else is done for it). The
 * slot the request takes goes back once the answer has left, whatever the route did.
 */
export function tenantRoute(route: TenantRoute): Route {
  return async function admittedRoute(ctx) {
    let releaseSlot: SlotRelease | undefined;
    try {
      const id = ctx.request.params.tenant ?? '';
      const tenant = await findTenant(id, ctx.log);
      if (!tenant) throw notFound('tenant_not_found', `Tenant "${id.slice(0, 64)}" does not exist`);
      releaseSlot = await admitTenantRequest(tenant, ctx);
      return await route(ctx.setTenant(tenant));
    } finally {
      // After the answer has left, the instance busy until the slot is back (after-answer.ts):
      // the slot costs the answer no round trip. Without a host for that, before the answer.
      await afterAnswer(ctx.requestId, async () => releaseSlot?.());
    }
  };
}
