import { findTenant, type TenantConfig } from '../config/tenants.js';
import { notFound } from '../core/errors.js';
import type { HttpRequest } from './http.js';
import { serviceLog } from './observability.js';

/** The tenant named by the first path segment; 404 when the registry does not know it. */
export async function requireTenant(request: HttpRequest): Promise<TenantConfig> {
  const id = request.params.tenant ?? '';
  const tenant = await findTenant(id, serviceLog());
  if (!tenant) throw notFound('tenant_not_found', `Tenant "${id.slice(0, 64)}" does not exist`);
  return tenant;
}
