import { getParameter } from '@aws-lambda-powertools/parameters/ssm';

/**
 * The tenant registry's text in an SSM SecureString (`TENANT_REGISTRY_PARAMETER`), through
 * Powertools Parameters (its client, retries and decryption), asked anew every time as in
 * secrets-manager.ts (why there).
 */
export function readRegistry(name: string): Promise<unknown> {
  return getParameter(name, { forceFetch: true, decrypt: true });
}
