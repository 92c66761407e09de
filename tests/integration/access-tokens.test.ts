/**
 * Bearer token verification (CONTRACT 4d) with the real library (jose) against a second issuer on
 * loopback with its own JWKS: rotation, an unknown `kid` refetched at most every 10 s, the issuer
 * down or slow (its cached keys kept), fetches bounded in time and size, key sets at forbidden
 * addresses refused before connecting, and hostile tokens. The clock is moved with vitest's fake
 * Date; the fetches are real.
 */
import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:net';
import { SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  KeySetUnavailableError,
  TokenRejectedError,
  type TrustedIssuer,
  verifyAccessToken,
} from '../../shared/adapters/jose/access-tokens.js';
import {
  forgetKeySets,
  identityProviderKeys,
  JWKS_FETCH_TIMEOUT_MS,
  MAX_JWKS_BYTES,
  useKeySetResolver,
} from '../../shared/adapters/jose/jwks.js';
import { type IssuerKey, issuerKey, startTestIssuer, type TestIssuer } from '../support/token-issuer.js';

const AUDIENCE = 'api://erp-gateway';
let idp: TestIssuer;
let first: IssuerKey;
let second: IssuerKey;
let trusted: TrustedIssuer[];

beforeAll(async () => {
  // The test issuer is http on loopback, as the local stack allows (docs/configuration.md).
  process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS = 'true';
  idp = await startTestIssuer(AUDIENCE);
  first = await issuerKey('first-key');
  second = await issuerKey('second-key', 'RS256');
  trusted = [{ issuer: idp.issuer, audience: AUDIENCE, keys: { jwksUri: idp.jwksUri }, scopeClaim: 'roles' }];
});
afterAll(async () => {
  delete process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS;
  await idp?.close();
});
beforeEach(() => {
  forgetKeySets();
  Object.assign(idp, { keys: [first], mode: 'up', body: undefined, fetches: 0 });
  vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
});
afterEach(() => {
  vi.useRealTimers();
});

const refused = (token: string, issuers = trusted) =>
  expect(verifyAccessToken(token, issuers)).rejects.toBeInstanceOf(TokenRejectedError);
const later = (ms: number) => vi.setSystemTime(Date.now() + ms);

describe('an identity provider’s tokens', () => {
  it('accepts a token signed with a published key, its scopes from the configured claim', async () => {
    const token = await idp.sign(first, { roles: ['data.read', 'files.read'], azp: 'app-1' });
    await expect(verifyAccessToken(token, trusted)).resolves.toMatchObject({
      issuer: idp.issuer,
      subject: 'integration-1',
      client: 'app-1',
      scopes: ['data.read', 'files.read'],
    });
    // `scp` as Entra ID writes it (space-separated), and `scope`.
    const scp = [{ ...trusted[0]!, scopeClaim: 'scp' as const }];
    await expect(
      verifyAccessToken(await idp.sign(first, { scp: 'data.read changes.read' }), scp),
    ).resolves.toMatchObject({
      scopes: ['data.read', 'changes.read'],
    });
    expect(idp.fetches).toBe(1);
  });

  it('takes the settings of an issuer like Amazon Cognito: no aud, the client_id one of the audience, scopes with a prefix', async () => {
    const cognito: TrustedIssuer[] = [
      {
        issuer: idp.issuer,
        audience: ['app-client-1', 'app-client-2'],
        audienceClaim: 'client_id',
        scopePrefix: 'erp-gateway/',
        keys: { jwksUri: idp.jwksUri },
        scopeClaim: 'scope',
      },
    ];
    const accessToken = (clientId: string) =>
      idp.sign(first, {
        aud: undefined,
        client_id: clientId,
        token_use: 'access',
        scope: 'erp-gateway/data.read other/files.write',
      });
    await expect(verifyAccessToken(await accessToken('app-client-2'), cognito)).resolves.toMatchObject({
      client: 'app-client-2',
      scopes: ['data.read'],
    });
    await refused(await accessToken('app-client-9'), cognito);
    // Several audiences for aud as well: any one of them.
    const several = [{ ...trusted[0]!, audience: ['api://one', AUDIENCE] }];
    await expect(verifyAccessToken(await idp.sign(first), several)).resolves.toBeDefined();
  });

  it('follows a rotation: a new key is fetched for its unknown kid, at most every 10 s; a removed key stops with the next fetch', async () => {
    await verifyAccessToken(await idp.sign(first), trusted);
    idp.keys = [first, second];
    const bySecond = await idp.sign(second);
    // Fetched a moment ago: an unknown kid does not fetch again within 10 s.
    await refused(bySecond);
    expect(idp.fetches).toBe(1);
    later(9_000);
    await refused(bySecond);
    expect(idp.fetches).toBe(1);
    // 10 s after the last fetch: the provider's new key is followed (CONTRACT 4d, not a minute).
    later(1_000);
    await expect(verifyAccessToken(bySecond, trusted)).resolves.toMatchObject({ subject: 'integration-1' });
    expect(idp.fetches).toBe(2);
    // A flood of unknown kids fetches once per 10 s, not once per token.
    const unknown = await issuerKey('nobody-knows');
    for (let i = 0; i < 20; i++) await refused(await idp.sign(unknown));
    expect(idp.fetches).toBe(2);
    // The old key removed: tokens it signed are refused once the set is fetched again (its age).
    idp.keys = [second];
    later(11 * 60_000);
    const byFirst = await idp.sign(first);
    // Still answered from the cached set, which starts its refresh beside the request.
    await expect(verifyAccessToken(byFirst, trusted)).resolves.toBeDefined();
    await vi.waitFor(() => expect(idp.fetches).toBe(3));
    await new Promise((resolve) => setTimeout(resolve, 50));
    await refused(byFirst);
  });

  it('keeps the cached keys while the issuer is down or slow, and says unavailable only without any', async () => {
    const token = await idp.sign(first);
    await verifyAccessToken(token, trusted);
    idp.mode = 'down';
    later(11_000);
    await expect(verifyAccessToken(await idp.sign(second), trusted)).rejects.toBeInstanceOf(
      TokenRejectedError,
    );
    await expect(verifyAccessToken(token, trusted)).resolves.toBeDefined();
    idp.mode = 'slow';
    idp.delayMs = JWKS_FETCH_TIMEOUT_MS + 1000;
    later(11_000);
    const started = performance.now();
    await refused(await idp.sign(second));
    // The fetch gave up at its time limit, not when the issuer answered.
    expect(performance.now() - started).toBeLessThan(JWKS_FETCH_TIMEOUT_MS + 900);
    await expect(verifyAccessToken(token, trusted)).resolves.toBeDefined();
    // Never fetched: no keys to fall back on.
    forgetKeySets();
    idp.mode = 'down';
    await expect(verifyAccessToken(token, trusted)).rejects.toBeInstanceOf(KeySetUnavailableError);
  });

  it('bounds a fetch in size and shape', async () => {
    idp.body = JSON.stringify({ keys: [{ kty: 'oct', k: 'x'.repeat(MAX_JWKS_BYTES) }] });
    await expect(identityProviderKeys(idp.jwksUri)).rejects.toThrow(/larger than/);
    forgetKeySets();
    idp.body = '<html>not json</html>';
    await expect(identityProviderKeys(idp.jwksUri)).rejects.toThrow(/not JSON/);
    forgetKeySets();
    idp.body = JSON.stringify({ keys: 'none' });
    await expect(identityProviderKeys(idp.jwksUri)).rejects.toThrow(/"keys" array/);
  });
});

describe('hostile tokens are refused, none an error of another kind', () => {
  it('alg none, HS256 with the public key, a key in the header, jku elsewhere', async () => {
    await verifyAccessToken(await idp.sign(first), trusted);
    const claims = { iss: idp.issuer, aud: AUDIENCE, sub: 'x', exp: Math.floor(Date.now() / 1000) + 300 };
    await refused(new UnsecuredJWT(claims).encode());
    // HS256 keyed with the issuer's public key, as if it were a shared secret.
    const publicPem = Buffer.from(JSON.stringify(first.publicJwk));
    await refused(
      await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid: 'first-key' }).sign(publicPem),
    );
    // Signed with an attacker's key that the header carries (jwk) or points at (jku, x5u).
    const attacker = await issuerKey('first-key');
    await refused(await idp.sign(attacker, {}, { jwk: attacker.publicJwk }));
    await refused(
      await idp.sign(attacker, {}, { jku: 'http://127.0.0.1:9/evil.json', x5u: 'http://127.0.0.1:9/x' }),
    );
    expect(idp.fetches).toBe(1);
  });

  it('expired, not yet valid or issued in the future (beyond 60 s of skew), wrong iss or aud, no exp, too long, kid with path or SQL characters', async () => {
    const now = Math.floor(Date.now() / 1000);
    await expect(verifyAccessToken(await idp.sign(first, { iat: now + 30 }), trusted)).resolves.toBeDefined();
    await refused(await idp.sign(first, { iat: now + 61 }));
    // The fifth round's token: issued an hour ahead, otherwise valid.
    await refused(await idp.sign(first, { iat: now + 3600, exp: now + 3900 }));
    await refused(await idp.sign(first, { iat: 'yesterday' as unknown as number }));
    await expect(verifyAccessToken(await idp.sign(first, { exp: now - 30 }), trusted)).resolves.toBeDefined();
    await refused(await idp.sign(first, { exp: now - 61 }));
    await expect(verifyAccessToken(await idp.sign(first, { nbf: now + 30 }), trusted)).resolves.toBeDefined();
    await refused(await idp.sign(first, { nbf: now + 120 }));
    await refused(await idp.sign(first, { iss: `${idp.issuer}/other` }));
    await refused(await idp.sign(first, { aud: 'api://someone-else' }));
    await refused(await idp.sign(first, { exp: undefined }));
    await refused(await idp.sign(first, { padding: 'x'.repeat(8 * 1024) }));
    for (const kid of ['../../etc/passwd', "x' OR '1'='1", 'https://evil.example/key']) {
      await refused(await idp.sign({ ...first, kid }));
    }
    await refused('not.a.token');
    await refused('');
  });

  it('a token of an algorithm outside the list (RS512) or of a key type the set does not hold', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const claims = { iss: idp.issuer, aud: AUDIENCE, sub: 'x', exp: Math.floor(Date.now() / 1000) + 300 };
    await refused(
      await new SignJWT(claims).setProtectedHeader({ alg: 'RS512', kid: 'first-key' }).sign(privateKey),
    );
  });
});

describe('a key set at an address the service must not reach', () => {
  let listener: Server;
  let port: number;
  let connections = 0;
  beforeAll(async () => {
    // Stands in for a service inside the deployment's network: it counts who reaches it.
    listener = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    port = (listener.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => listener.close(() => resolve()));
  });
  beforeEach(() => {
    process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS = 'false';
    connections = 0;
  });
  afterEach(() => {
    process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS = 'true';
    useKeySetResolver();
  });

  it('is refused before connecting when its host name resolves to loopback, private, link-local or metadata addresses', async () => {
    // `localhost` as the system resolves it (/etc/hosts): loopback.
    await expect(identityProviderKeys(`https://localhost:${port}/jwks`)).rejects.toThrow(
      /localhost resolves to (127\.0\.0\.1|::1), which is loopback/,
    );
    expect(connections).toBe(0);
    // Names whose answers a hostile DNS could give: any forbidden address among them refuses.
    const answers: Record<string, [string, 4 | 6][]> = {
      'metadata.idp.example': [['169.254.169.254', 4]],
      'ec2-v6.idp.example': [['fd00:ec2::254', 6]],
      'intranet.idp.example': [['10.0.0.7', 4]],
      'home.idp.example': [['192.168.1.20', 4]],
      'mixed.idp.example': [
        ['203.0.114.7', 4],
        ['127.0.0.1', 4],
      ],
    };
    useKeySetResolver(async (hostname) =>
      (answers[hostname] ?? []).map(([address, family]) => ({ address, family })),
    );
    for (const [host, addresses] of Object.entries(answers)) {
      forgetKeySets();
      const forbidden = addresses.find(([address]) => address !== '203.0.114.7')![0];
      await expect(identityProviderKeys(`https://${host}/keys`), host).rejects.toThrow(
        new RegExp(`${host.replace(/\./g, '\\.')} resolves to ${forbidden}, which is`),
      );
    }
    // A token of such an issuer: the keys are unavailable (503), not a key set fetched from inside.
    forgetKeySets();
    const inside: TrustedIssuer[] = [
      { ...trusted[0]!, keys: { jwksUri: 'https://metadata.idp.example/keys' } },
    ];
    await expect(verifyAccessToken(await idp.sign(first), inside)).rejects.toBeInstanceOf(
      KeySetUnavailableError,
    );
    // An IP literal (which the registry refuses already) is refused here too.
    forgetKeySets();
    await expect(identityProviderKeys(`https://127.0.0.1:${port}/jwks`)).rejects.toThrow(
      /address 127\.0\.0\.1 is loopback/,
    );
    expect(connections).toBe(0);
  });

  it('is reached where WEBHOOK_ALLOW_PRIVATE_TARGETS is true (the local stack)', async () => {
    process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS = 'true';
    // It connects (and fails: the stand-in speaks no TLS), which the refusal above never did.
    await expect(identityProviderKeys(`https://localhost:${port}/jwks`)).rejects.toBeInstanceOf(
      KeySetUnavailableError,
    );
    expect(connections).toBe(1);
  });
});
