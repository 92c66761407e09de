import { createHash } from 'node:crypto';
import { isScope, scopeCovers } from './caller.js';

/**
 * The gateway as OAuth 2.0 authorization server for machine clients (CONTRACT 4d): the client
 * credentials grant of RFC 6749 section 4.4, errors as its section 5.2.
 */

/** An RFC 6749 section 5.2 error: 400, or 401 `invalid_client` with `WWW-Authenticate: Basic`. */
export class OAuthError extends Error {
  override readonly name = 'OAuthError';
  constructor(
    readonly status: 400 | 401,
    readonly error: 'invalid_request' | 'invalid_client' | 'unsupported_grant_type' | 'invalid_scope',
    readonly description: string,
  ) {
    super(description);
  }
}

const invalidRequest = (description: string) => new OAuthError(400, 'invalid_request', description);
const invalidClient = () => new OAuthError(401, 'invalid_client', 'Client authentication failed');

/** A client of the tenant's registry entry. */
export interface OAuthClient {
  readonly clientId: string;
  readonly secretHashes: readonly string[];
  readonly scopes: readonly string[];
}

/** Port: what signs a token. */
export interface AccessTokenIssuer {
  issue(claims: {
    readonly issuer: string;
    readonly audience: string;
    readonly clientId: string;
    /** {@link secretFingerprint} of the hash the client's secret matched. */
    readonly secretFingerprint: string;
    readonly scopes: readonly string[];
    readonly lifetimeSeconds: number;
    readonly now: number;
  }): Promise<IssuedToken>;
}

/**
 * The claim of the gateway's tokens that names the secret hash the client authenticated with, so
 * that a token dies with its hash: removing a client, or one of its `secretHashes` (the end of a
 * rotation, or an emergency stop), refuses its tokens from the registry's next read, not when they
 * expire. Chosen over an issued-at against a per-client "not before" in the registry: nothing more
 * to set by hand, and a rotation's old tokens stop exactly when the old hash goes.
 */
export const SECRET_FINGERPRINT_CLAIM = 'secret_fingerprint';

/**
 * A short fingerprint of a client's secret hash for {@link SECRET_FINGERPRINT_CLAIM}: 96 bits of
 * SHA-256 over the hash as the registry holds it. Never the hash itself: a token is read by whoever
 * holds it, and the hash is what a guess at the secret would be checked against; this tells
 * nothing of the hash's salt or digest.
 */
export function secretFingerprint(hash: string): string {
  return createHash('sha256').update(hash).digest('base64url').slice(0, 16);
}

export interface IssuedToken {
  readonly token: string;
  readonly expiresIn: number;
}

/**
 * Port: checks a client's secret against its hashes (scrypt, remembered in a warm instance); the
 * hash it matched, or undefined.
 */
export type ClientSecretCheck = (
  client: OAuthClient | undefined,
  secret: string,
) => Promise<string | undefined>;

export interface TokenEndpointContext {
  readonly clients: readonly OAuthClient[];
  /** `<base_url>`: the tokens' `iss` and `aud`. */
  readonly baseUrl: string;
  readonly lifetimeSeconds: number;
  readonly checkSecret: ClientSecretCheck;
  readonly issuer: AccessTokenIssuer;
  readonly now: number;
  /** Hears the client once it is authenticated (the request's log lines name it). */
  readonly onClient?: (clientId: string) => void;
}

/** The token endpoint's request: its form fields and its `Authorization` header. */
export interface TokenRequest {
  readonly contentType: string | undefined;
  readonly body: string;
  readonly authorization: string | undefined;
}

/** The answer of a granted request (RFC 6749 section 5.1). */
export interface TokenAnswer {
  readonly access_token: string;
  readonly token_type: 'Bearer';
  readonly expires_in: number;
  readonly scope: string;
}

/** The largest form a token request needs. */
export const MAX_TOKEN_REQUEST_BYTES = 4096;

/** The form's fields; a field given twice is refused (RFC 6749 section 3.2). */
function formFields(request: TokenRequest): Map<string, string> {
  const type = (request.contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw invalidRequest('The request must be application/x-www-form-urlencoded');
  }
  if (Buffer.byteLength(request.body) > MAX_TOKEN_REQUEST_BYTES) {
    throw invalidRequest(`The request is larger than ${MAX_TOKEN_REQUEST_BYTES} bytes`);
  }
  const fields = new Map<string, string>();
  for (const [name, value] of new URLSearchParams(request.body)) {
    if (fields.has(name)) throw invalidRequest(`The parameter ${name.slice(0, 40)} is given more than once`);
    fields.set(name, value);
  }
  return fields;
}

/** `client_secret_basic` (RFC 6749 section 2.3.1: both parts form-urlencoded) or undefined. */
function basicCredentials(header: string | undefined): { id: string; secret: string } | undefined {
  if (!header) return undefined;
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!match) throw invalidClient();
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw invalidClient();
  try {
    return {
      id: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' ')),
      secret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' ')),
    };
  } catch {
    throw invalidClient();
  }
}

/**
 * `POST /{tenant}/oauth2/token`: authenticates the client (`client_secret_basic` or
 * `client_secret_post`, exactly one), checks the grant and the scopes asked (a subset of the
 * client's; none asked: all of them), and issues a token.
 */
export async function grantClientCredentials(
  ctx: TokenEndpointContext,
  request: TokenRequest,
): Promise<TokenAnswer> {
  const fields = formFields(request);
  const inHeader = basicCredentials(request.authorization);
  const postedId = fields.get('client_id');
  const postedSecret = fields.get('client_secret');
  if (inHeader && postedSecret !== undefined) {
    throw invalidRequest(
      'Authenticate the client one way: the Authorization header or client_secret, not both',
    );
  }
  const grantType = fields.get('grant_type');
  if (grantType === undefined) throw invalidRequest('grant_type is missing');
  const credentials =
    inHeader ??
    (postedId !== undefined && postedSecret !== undefined
      ? { id: postedId, secret: postedSecret }
      : undefined);
  if (!credentials) throw invalidClient();
  if (inHeader && postedId !== undefined && postedId !== inHeader.id) {
    throw invalidRequest('client_id differs from the client of the Authorization header');
  }
  const client = ctx.clients.find((candidate) => candidate.clientId === credentials.id);
  // Every attempt costs one scrypt (a remembered one none), known client or not.
  const matchedHash = await ctx.checkSecret(client, credentials.secret);
  if (matchedHash === undefined || !client) throw invalidClient();
  ctx.onClient?.(client.clientId);
  if (grantType !== 'client_credentials') {
    throw new OAuthError(400, 'unsupported_grant_type', 'Only grant_type=client_credentials is supported');
  }
  const asked = fields.get('scope');
  let scopes: string[];
  if (asked === undefined || asked.trim() === '') scopes = [...client.scopes];
  else {
    scopes = [...new Set(asked.split(' ').filter(Boolean))];
    const refused = scopes.find((scope) => !isScope(scope) || !scopeCovers(client.scopes, scope));
    if (refused !== undefined) {
      throw new OAuthError(
        400,
        'invalid_scope',
        `The scope ${refused.slice(0, 100)} is not one this client may ask for`,
      );
    }
  }
  const issued = await ctx.issuer.issue({
    issuer: ctx.baseUrl,
    audience: ctx.baseUrl,
    clientId: client.clientId,
    secretFingerprint: secretFingerprint(matchedHash),
    scopes,
    lifetimeSeconds: ctx.lifetimeSeconds,
    now: ctx.now,
  });
  return {
    access_token: issued.token,
    token_type: 'Bearer',
    expires_in: issued.expiresIn,
    scope: scopes.join(' '),
  };
}
