import { createHash, randomUUID } from 'node:crypto';
import {
  type CryptoKey,
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  importJWK,
  type JSONWebKeySet,
  type JWK,
  type JWTPayload,
  jwtVerify,
  SignJWT,
} from 'jose';
import {
  type AccessTokenIssuer,
  type IssuedToken,
  SECRET_FINGERPRINT_CLAIM,
} from '../../core/auth/client-credentials.js';
import { identityProviderKeys, KeySetUnavailableError } from './jwks.js';
import { TokenRejectedError } from './token-keys.js';

/** The algorithms a token may be signed with (CONTRACT 4d): never `none`, never an HMAC. */
export const TOKEN_ALGORITHMS = ['RS256', 'PS256', 'ES256', 'EdDSA'] as const;
/** Clock skew allowed on `exp`, `nbf` and `iat`. */
export const CLOCK_TOLERANCE_SECONDS = 60;
/** The longest token read: a JWT of a client credentials grant is one or two KB. */
export const MAX_TOKEN_LENGTH = 8000;

/** An issuer whose tokens a tenant accepts. */
export interface TrustedIssuer {
  readonly issuer: string;
  /** The audience, or any of several. */
  readonly audience: string | readonly string[];
  /** Where it is: `aud`, or `client_id` (Cognito's access tokens carry no `aud`). */
  readonly audienceClaim?: 'aud' | 'client_id';
  /** Taken off the front of each scope (Cognito: `<resource server>/`). */
  readonly scopePrefix?: string;
  /** Where its keys are: an identity provider's JWKS URL, or the gateway's own keys. */
  readonly keys: { readonly jwksUri: string } | { readonly own: JSONWebKeySet };
  readonly scopeClaim: 'scope' | 'scp' | 'roles';
}

/** What a valid token says of its caller. */
export interface VerifiedToken {
  readonly issuer: string;
  readonly subject: string;
  readonly client: string;
  readonly scopes: readonly string[];
  /** When it expires (ms since the epoch). */
  readonly expiresAt: number;
  /** The gateway's own tokens: which of the client's secret hashes it was issued under. */
  readonly secretFingerprint?: string;
}

export { KeySetUnavailableError, TokenRejectedError };

function scopesOf(payload: JWTPayload, claim: TrustedIssuer['scopeClaim'], prefix = ''): string[] {
  const value = payload[claim];
  let scopes: string[] = [];
  if (typeof value === 'string') scopes = value.split(' ').filter(Boolean);
  else if (Array.isArray(value)) scopes = value.filter((item): item is string => typeof item === 'string');
  if (!prefix) return scopes;
  return scopes.filter((scope) => scope.startsWith(prefix)).map((scope) => scope.slice(prefix.length));
}

const stringClaim = (payload: JWTPayload, name: string) =>
  typeof payload[name] === 'string' && payload[name] !== '' ? (payload[name] as string) : undefined;

/** Key sets built for jose once per set seen (its imported keys are kept with it). */
const localSets = new WeakMap<JSONWebKeySet, ReturnType<typeof createLocalJWKSet>>();
function localSet(jwks: JSONWebKeySet) {
  let found = localSets.get(jwks);
  if (!found) {
    found = createLocalJWKSet(jwks);
    localSets.set(jwks, found);
  }
  return found;
}

/**
 * Verifies a bearer token against the issuers `trusted` (CONTRACT 4d): its `iss` picks the issuer;
 * signature with that issuer's keys (an unknown `kid` fetches its set again, at most once per
 * JWKS_REFETCH_INTERVAL_MS), `aud`, `exp` (required), `nbf` and `iat` with
 * {@link CLOCK_TOLERANCE_SECONDS} of skew, only {@link TOKEN_ALGORITHMS}. Header members that point at keys elsewhere (`jku`, `x5u`, `jwk`,
 * `x5c`) are never followed: keys come from the issuer's configured set only.
 */
export async function verifyAccessToken(
  token: string,
  trusted: readonly TrustedIssuer[],
): Promise<VerifiedToken> {
  if (token.length > MAX_TOKEN_LENGTH)
    throw new TokenRejectedError(`longer than ${MAX_TOKEN_LENGTH} characters`);
  let issuer: string | undefined;
  let alg: unknown;
  try {
    alg = decodeProtectedHeader(token).alg;
    issuer = decodeJwt(token).iss;
  } catch {
    throw new TokenRejectedError('not a JWT');
  }
  if (!(TOKEN_ALGORITHMS as readonly unknown[]).includes(alg)) {
    throw new TokenRejectedError(`algorithm ${String(alg).slice(0, 20)} not allowed`);
  }
  const trust = trusted.find((candidate) => candidate.issuer === issuer);
  if (!trust) throw new TokenRejectedError('issuer not trusted by the tenant');
  const byClientId = trust.audienceClaim === 'client_id';
  const options = {
    issuer: trust.issuer,
    // jose checks `aud`; an issuer whose audience is its `client_id` is checked below.
    ...(byClientId ? {} : { audience: [trust.audience].flat() }),
    algorithms: [...TOKEN_ALGORITHMS],
    clockTolerance: CLOCK_TOLERANCE_SECONDS,
    requiredClaims: ['exp'],
  };
  let verified: Awaited<ReturnType<typeof jwtVerify>>;
  try {
    if ('own' in trust.keys) verified = await jwtVerify(token, localSet(trust.keys.own), options);
    else {
      const { jwksUri } = trust.keys;
      try {
        verified = await jwtVerify(token, localSet(await identityProviderKeys(jwksUri)), options);
      } catch (error) {
        if ((error as { code?: string }).code !== 'ERR_JWKS_NO_MATCHING_KEY') throw error;
        // A key the cached set lacks: the provider may have rotated; its set once more.
        verified = await jwtVerify(token, localSet(await identityProviderKeys(jwksUri, true)), options);
      }
    }
  } catch (error) {
    if (error instanceof KeySetUnavailableError) throw error;
    const code = (error as { code?: string }).code ?? 'ERR_JWT_INVALID';
    throw new TokenRejectedError(`${code}: ${(error as Error).message}`.slice(0, 200));
  }
  const { payload } = verified;
  // jose checks `iat` only against a maximum age; one from the future means a token made ahead of
  // time (or a clock far off): refused as `nbf` would be. jose has checked that it is a number.
  if (payload.iat !== undefined && payload.iat > Date.now() / 1000 + CLOCK_TOLERANCE_SECONDS) {
    throw new TokenRejectedError('iat is in the future');
  }
  if (
    byClientId &&
    !(typeof payload.client_id === 'string' && [trust.audience].flat().includes(payload.client_id))
  ) {
    throw new TokenRejectedError('client_id not one of the audience');
  }
  const subject = stringClaim(payload, 'sub');
  const client =
    stringClaim(payload, 'client_id') ??
    stringClaim(payload, 'azp') ??
    stringClaim(payload, 'appid') ??
    subject;
  if (!subject || !client) throw new TokenRejectedError('no sub');
  return {
    issuer: trust.issuer,
    subject,
    client,
    scopes: scopesOf(payload, trust.scopeClaim, trust.scopePrefix),
    expiresAt: (payload.exp ?? 0) * 1000,
    secretFingerprint: stringClaim(payload, SECRET_FINGERPRINT_CLAIM),
  };
}

/** Imported private keys, by the JWK's digest: importing costs more than signing. */
const privateKeys = new Map<string, Promise<CryptoKey | Uint8Array>>();

/** Signs the gateway's access tokens (RFC 9068 `at+jwt`) with `jwk`, a private key of `alg`. */
export function joseTokenIssuer(jwk: Readonly<Record<string, unknown>>, alg: string): AccessTokenIssuer {
  const digest = createHash('sha256').update(JSON.stringify(jwk)).digest('base64');
  return {
    async issue(claims): Promise<IssuedToken> {
      let key = privateKeys.get(digest);
      if (!key) {
        if (privateKeys.size >= 20) privateKeys.clear();
        key = importJWK(jwk as JWK, alg);
        privateKeys.set(digest, key);
        key.catch(() => privateKeys.delete(digest));
      }
      const issuedAt = Math.floor(claims.now / 1000);
      const token = await new SignJWT({
        client_id: claims.clientId,
        scope: claims.scopes.join(' '),
        [SECRET_FINGERPRINT_CLAIM]: claims.secretFingerprint,
      })
        .setProtectedHeader({ alg, kid: String(jwk.kid), typ: 'at+jwt' })
        .setIssuer(claims.issuer)
        .setAudience(claims.audience)
        .setSubject(claims.clientId)
        .setJti(randomUUID())
        .setIssuedAt(issuedAt)
        .setNotBefore(issuedAt)
        .setExpirationTime(issuedAt + claims.lifetimeSeconds)
        .sign(await key);
      return { token, expiresIn: claims.lifetimeSeconds };
    },
  };
}
