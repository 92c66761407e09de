import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CryptoKey, exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from 'jose';

/** A signing key of the test issuer: its private key and its public JWK. */
export interface IssuerKey {
  readonly kid: string;
  readonly alg: 'ES256' | 'RS256' | 'PS256' | 'EdDSA';
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
}

export async function issuerKey(kid: string, alg: IssuerKey['alg'] = 'ES256'): Promise<IssuerKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, alg, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/**
 * A second issuer on loopback, as a tenant's identity provider (Entra ID, Cognito, Keycloak) is:
 * its JWKS at `/jwks`, whose keys, answer and delay the test changes; it counts the fetches.
 */
export interface TestIssuer {
  readonly url: string;
  readonly issuer: string;
  readonly jwksUri: string;
  /** The keys published (the test adds and removes). */
  keys: IssuerKey[];
  /** `up` answers, `down` refuses with 503, `slow` answers after `delayMs`. */
  mode: 'up' | 'down' | 'slow';
  delayMs: number;
  /** A body to serve instead of the key set (a large or broken one). */
  body?: string;
  fetches: number;
  /** A token signed with `key`, with the claims given over the defaults (iss, aud, sub, exp in 5 min). */
  sign(key: IssuerKey, claims?: JWTPayload, header?: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

export async function startTestIssuer(audience: string): Promise<TestIssuer> {
  const sockets = new Set<import('node:net').Socket>();
  const state = {
    keys: [] as IssuerKey[],
    mode: 'up' as TestIssuer['mode'],
    delayMs: 3000,
    body: undefined as string | undefined,
    fetches: 0,
  };
  const server: Server = createServer((request, response) => {
    if (request.url !== '/jwks') {
      response.writeHead(404).end();
      return;
    }
    state.fetches++;
    const answer = () => {
      if (state.mode === 'down') {
        response.writeHead(503).end();
        return;
      }
      const body = state.body ?? JSON.stringify({ keys: state.keys.map((key) => key.publicJwk) });
      response.writeHead(200, { 'content-type': 'application/json' }).end(body);
    };
    if (state.mode === 'slow') setTimeout(answer, state.delayMs);
    else answer();
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const issuer = `${url}/issuer`;
  return Object.assign(state, {
    url,
    issuer,
    jwksUri: `${url}/jwks`,
    async sign(key: IssuerKey, claims: JWTPayload = {}, header: Record<string, unknown> = {}) {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({
        iss: issuer,
        aud: audience,
        sub: 'integration-1',
        iat: now,
        exp: now + 300,
        ...claims,
      })
        .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT', ...header })
        .sign(key.privateKey);
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
}
