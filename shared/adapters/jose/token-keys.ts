import type { JWK } from 'jose';

/**
 * What the Data API's functions need of tokens before a bearer token arrives: the published keys
 * and the refusal. jose itself is loaded with the first bearer token (bearer-caller.ts), so that a
 * function answering only Basic callers does not parse it at its cold start.
 */

/** Why a token was refused: for the log only; the caller hears RFC 6750's `invalid_token`. */
export class TokenRejectedError extends Error {
  override readonly name = 'TokenRejectedError';
}

/**
 * The identity provider could not be asked for its keys, and none are known yet (here, not in
 * jwks.ts, so that the fetch of key sets loads with jose).
 */
export class KeySetUnavailableError extends Error {
  override readonly name = 'KeySetUnavailableError';
}

/** The members of a JWK that are public, by key type. */
const PUBLIC_MEMBERS: Record<string, readonly string[]> = {
  EC: ['kty', 'crv', 'x', 'y'],
  OKP: ['kty', 'crv', 'x'],
  RSA: ['kty', 'n', 'e'],
};

/** `jwk` without its private members, with `kid`, `alg` and `use`: what `jwks.json` publishes. */
export function publicJwk(jwk: Readonly<Record<string, unknown>>, alg: string): JWK {
  const members = PUBLIC_MEMBERS[String(jwk.kty)] ?? [];
  return {
    ...Object.fromEntries(members.filter((name) => jwk[name] !== undefined).map((name) => [name, jwk[name]])),
    kid: String(jwk.kid),
    alg,
    use: 'sig',
  } as JWK;
}
