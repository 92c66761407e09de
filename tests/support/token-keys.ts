import { generateKeyPairSync } from 'node:crypto';
import { withTokenSigningKey } from '../../infra/local/stack.js';

/** An EC P-256 private key as a JWK, with its `kid`: what the registry's `tokenSigningKeys` hold. */
export function tokenSigningJwk(kid = 'test-key'): Record<string, unknown> {
  return { ...generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' }), kid };
}

/** One key for the whole test process: generating is cheap, but a registry compared twice must match. */
export const TEST_TOKEN_KEY = tokenSigningJwk();

/** `registry` with the test's token signing key where it names none (as the local stack adds its own). */
export const withTestTokenKey = (registry: unknown): unknown => withTokenSigningKey(registry, TEST_TOKEN_KEY);
