import { getSecret } from '@aws-lambda-powertools/parameters/secrets';

/**
 * The tenant registry's text in a Secrets Manager secret (`TENANT_REGISTRY_SECRET_ID`), through
 * Powertools Parameters (its client, retries). Its cache is not what decides when to read again —
 * the registry in memory is (config/tenant-registry.ts), so every read here asks (`forceFetch`):
 * a cache of its own that expired a moment after that one would make a change wait twice the max age.
 */
export function readRegistry(secretId: string): Promise<unknown> {
  return getSecret(secretId, { forceFetch: true });
}
