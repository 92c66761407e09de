import { findTenant } from '../config/tenant-registry.js';
import type { TenantConfig } from '../config/tenants.js';
import { notFound } from '../core/errors.js';
import type { HttpRequest } from './http.js';
import { serviceLog } from './observability.js';
import { admitTenantRequest } from './tenant-admission.js';

/**
 * The tenant named by the first path segment; 404 when the registry does not know it, 429 when the
 * request is over the tenant's fair share (before anything else is done for it).
 */
export async function requireTenant(request: HttpRequest): Promise<TenantConfig> {
  const id = request.params.tenant ?? '';
  const tenant = await findTenant(id, serviceLog());
  if (!tenant) throw notFound('tenant_not_found', `Tenant "${id.slice(0, 64)}" does not exist`);
  await admitTenantRequest(tenant, request);
  return tenant;
}
