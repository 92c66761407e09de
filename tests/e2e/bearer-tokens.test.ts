/**
 * CONTRACT 4d through the local stack, as an integrator meets it: a token from the gateway's own
 * token endpoint (client credentials) and one from a second issuer on loopback with its own JWKS
 * (the tenant's identity provider), each used on the Data API's routes with its scopes; hostile
 * tokens; Basic turned off; subscriptions owned by the token's client; the caller in the log.
 * Embedded under `npm test`; T-SQL, the packaged zips and the least-privileged login under
 * `npm run test:tsql`.
 */
import { createLocalJWKSet, jwtVerify, SignJWT, UnsecuredJWT } from 'jose';
import * as oauthClient from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { notingErrorCodes } from '../../infra/local/access-log.js';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import type { LogFields } from '../../shared/core/log.js';
import { useObservability } from '../../shared/lambda/observability.js';
import { DEMO_AUTH, useDemoTenantsWith } from '../support/demo.js';
import { redoclyProblemsOf } from '../support/redocly-lint.js';
import { type IssuerKey, issuerKey, startTestIssuer, type TestIssuer } from '../support/token-issuer.js';
import { tokenSigningJwk } from '../support/token-keys.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const CLIENT = { id: 'demo-client', secret: 'demo-client-secret' };
const AUDIENCE = 'api://erp-gateway-demo';
let stack: LocalStack;
let idp: TestIssuer;
let idpKey: IssuerKey;
let receiver: WebhookReceiver;

/** The tenants of these tests beside the demo tenant. */
const extraTenants = (demo: Record<string, unknown>) => ({
  // Its own identity provider (Entra ID puts application roles in `roles`), and the gateway's clients.
  idp: {
    ...demo,
    tokenIssuers: [{ issuer: idp.issuer, audience: AUDIENCE, jwksUri: idp.jwksUri, scopeClaim: 'roles' }],
  },
  // An identity provider that never answers: no keys to check a token with.
  unreachable: {
    ...demo,
    tokenIssuers: [
      { issuer: 'https://login.example/t', audience: AUDIENCE, jwksUri: 'http://127.0.0.1:9/keys' },
    ],
  },
  // Basic turned off.
  'bearer-only': { ...demo, dataApiAuth: ['bearer'] },
  // Another tenant of the same deployment, with the same client name.
  other: { ...demo },
  // No clients: the gateway is not its authorization server.
  'no-clients': { ...demo, oauthClients: [] },
});

beforeAll(async () => {
  idp = await startTestIssuer(AUDIENCE);
  idpKey = await issuerKey('idp-key-1', 'RS256');
  idp.keys = [idpKey];
  receiver = await startWebhookReceiver();
  stack = await startLocalStack({ port: 0 });
  useDemoTenantsWith(stack.registry, extraTenants);
});
afterAll(async () => {
  await stack?.stop();
  await idp?.close();
  await receiver?.close();
});

const basicOf = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

/** POST /{tenant}/oauth2/token with a form; client_secret_basic unless `post`. */
function tokenRequest(
  form: Record<string, string>,
  options: { tenant?: string; auth?: string | null; contentType?: string } = {},
) {
  const headers: Record<string, string> = {
    'content-type': options.contentType ?? 'application/x-www-form-urlencoded',
  };
  const auth = options.auth === undefined ? basicOf(CLIENT.id, CLIENT.secret) : options.auth;
  if (auth) headers.authorization = auth;
  return fetch(`${stack.url}/${options.tenant ?? 'demo'}/oauth2/token`, {
    method: 'POST',
    headers,
    body: new URLSearchParams(form).toString(),
  });
}

async function tokenFor(scope?: string, tenant = 'demo'): Promise<string> {
  const response = await tokenRequest(
    { grant_type: 'client_credentials', ...(scope ? { scope } : {}) },
    { tenant },
  );
  expect(response.status, await response.clone().text()).toBe(200);
  return ((await response.json()) as { access_token: string }).access_token;
}

const get = (path: string, authorization?: string, tenant = 'demo') =>
  fetch(`${stack.url}/${tenant}/JsonAPI${path}`, { headers: authorization ? { authorization } : {} });
const bearer = (token: string) => `Bearer ${token}`;
const errorOf = async (response: Response) =>
  ((await response.json()) as { error: { code: string; message: string } }).error;

describe("the gateway's token endpoint (client credentials)", () => {
  it('issues a short-lived JWT, signed with a published key, whose iss and aud are the tenant’s base URL', async () => {
    const response = await tokenRequest({ grant_type: 'client_credentials' });
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const answer = (await response.json()) as Record<string, unknown>;
    expect(answer).toMatchObject({ token_type: 'Bearer', expires_in: 900 });
    expect(String(answer.scope).split(' ').sort()).toEqual(
      ['changes.read', 'data.read', 'files.read', 'files.write', 'subscriptions.write'].sort(),
    );
    const metadata = (await (
      await fetch(`${stack.url}/demo/.well-known/oauth-authorization-server`)
    ).json()) as Record<string, string>;
    const base = `${stack.url}/demo`;
    expect(metadata).toMatchObject({
      issuer: base,
      token_endpoint: `${base}/oauth2/token`,
      jwks_uri: `${base}/.well-known/jwks.json`,
      grant_types_supported: ['client_credentials'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    });
    const jwks = (await (await fetch(metadata.jwks_uri!)).json()) as { keys: Record<string, unknown>[] };
    expect(jwks.keys.length).toBeGreaterThan(0);
    for (const key of jwks.keys) expect(key).not.toHaveProperty('d');
    // Any JOSE library verifies it with what is published.
    const { payload, protectedHeader } = await jwtVerify(
      String(answer.access_token),
      createLocalJWKSet(jwks as never),
      {
        issuer: base,
        audience: base,
      },
    );
    expect(protectedHeader).toMatchObject({ typ: 'at+jwt', alg: 'ES256' });
    expect(payload).toMatchObject({ sub: CLIENT.id, client_id: CLIENT.id });
    expect(payload.exp! - payload.iat!).toBe(900);
    expect(payload.jti).toEqual(expect.any(String));
    // The token reads.
    const read = await get('/Data/getRowsCount/SUBJECT', bearer(String(answer.access_token)));
    expect(read.status).toBe(200);
  });

  it('takes client_secret_post as well, and a scope narrowed to one source', async () => {
    const response = await tokenRequest(
      {
        grant_type: 'client_credentials',
        client_id: CLIENT.id,
        client_secret: CLIENT.secret,
        scope: 'data.read:SUBJECT',
      },
      { auth: null },
    );
    expect(response.status).toBe(200);
    expect(((await response.json()) as { scope: string }).scope).toBe('data.read:SUBJECT');
  });

  it('answers the errors of RFC 6749 section 5.2', async () => {
    const oauthError = async (response: Response, status: number, error: string) => {
      expect(response.status, error).toBe(status);
      const body = (await response.json()) as Record<string, string>;
      expect(body).toMatchObject({
        error,
        error_description: expect.any(String),
        request_id: expect.any(String),
      });
      expect(response.headers.get('cache-control')).toBe('no-store');
      return response;
    };
    const grant = { grant_type: 'client_credentials' };
    const wrong = await oauthError(
      await tokenRequest(grant, { auth: basicOf(CLIENT.id, 'wrong') }),
      401,
      'invalid_client',
    );
    expect(wrong.headers.get('www-authenticate')).toMatch(/^Basic /);
    await oauthError(
      await tokenRequest(grant, { auth: basicOf('nobody', CLIENT.secret) }),
      401,
      'invalid_client',
    );
    await oauthError(await tokenRequest(grant, { auth: null }), 401, 'invalid_client');
    await oauthError(await tokenRequest({ grant_type: 'password' }), 400, 'unsupported_grant_type');
    await oauthError(await tokenRequest({}), 400, 'invalid_request');
    await oauthError(await tokenRequest(grant, { contentType: 'application/json' }), 400, 'invalid_request');
    await oauthError(await tokenRequest({ ...grant, scope: 'admin' }), 400, 'invalid_scope');
    await oauthError(await tokenRequest({ ...grant, scope: 'data.read:not;a;name' }), 400, 'invalid_scope');
    await oauthError(await tokenRequest({ ...grant, client_secret: CLIENT.secret }), 400, 'invalid_request');
    await oauthError(
      await tokenRequest(grant, { tenant: 'no-clients' }),
      404,
      'authorization_server_not_configured',
    );
    await oauthError(await tokenRequest(grant, { tenant: 'nope' }), 404, 'tenant_not_found');
    expect((await fetch(`${stack.url}/no-clients/.well-known/jwks.json`)).status).toBe(404);
  });

  it("a client's token of one tenant is refused by another, though the client has the same name", async () => {
    const others = await tokenFor(undefined, 'other');
    const refused = await get('/Data/getRowsCount/SUBJECT', bearer(others));
    expect(refused.status).toBe(401);
    expect((await errorOf(refused)).code).toBe('invalid_token');
    expect((await get('/Data/getRowsCount/SUBJECT', bearer(others), 'other')).status).toBe(200);
  });
});

describe('discovery from the issuer alone (RFC 8414), as an OAuth 2.0 client library does', () => {
  it('openid-client discovers the tenant from its issuer URL, gets a token by client credentials and reads with it', async () => {
    const issuer = new URL(`${stack.url}/demo`);
    // The one setting an integrator is given: the issuer. http on loopback only for this test.
    const config = await oauthClient.discovery(issuer, CLIENT.id, CLIENT.secret, undefined, {
      algorithm: 'oauth2',
      execute: [oauthClient.allowInsecureRequests],
    });
    expect(config.serverMetadata()).toMatchObject({
      issuer: issuer.href,
      token_endpoint: `${issuer.href}/oauth2/token`,
      jwks_uri: `${issuer.href}/.well-known/jwks.json`,
    });
    const granted = await oauthClient.clientCredentialsGrant(config, { scope: 'data.read:SUBJECT' });
    expect(granted).toMatchObject({ token_type: 'bearer', scope: 'data.read:SUBJECT', expires_in: 900 });
    const read = await oauthClient.fetchProtectedResource(
      config,
      granted.access_token,
      new URL(`${issuer.href}/JsonAPI/Data/getRowsCount/SUBJECT`),
      'GET',
    );
    expect(read.status).toBe(200);
    expect(await read.json()).toEqual({ SUBJECT: [{ rowsCount: 60 }] });
  });

  it('serves the metadata at RFC 8414 section 3.1’s location and under the tenant alike; 404 for an unknown tenant or one without clients', async () => {
    const atWellKnown = await fetch(`${stack.url}/.well-known/oauth-authorization-server/demo`);
    expect(atWellKnown.status).toBe(200);
    const underTenant = await fetch(`${stack.url}/demo/.well-known/oauth-authorization-server`);
    expect(await atWellKnown.json()).toEqual(await underTenant.json());
    const unknown = await fetch(`${stack.url}/.well-known/oauth-authorization-server/nope`);
    expect(unknown.status).toBe(404);
    expect(await errorOf(unknown)).toMatchObject({ code: 'tenant_not_found' });
    const noClients = await fetch(`${stack.url}/.well-known/oauth-authorization-server/no-clients`);
    expect(noClients.status).toBe(404);
    expect(await errorOf(noClients)).toMatchObject({ code: 'authorization_server_not_configured' });
  });
});

describe("rotating the deployment's signing key", () => {
  it('publishes both keys; tokens of the old one verify until it is removed, new tokens carry the new kid', async () => {
    const local = stack.registry as { tokenSigningKeys: Record<string, unknown>[] };
    const [old] = local.tokenSigningKeys;
    const fresh = tokenSigningJwk('rotated-key');
    const withKeys = (keys: Record<string, unknown>[]) =>
      useDemoTenantsWith({ ...local, tokenSigningKeys: keys }, extraTenants);
    try {
      const before = await tokenFor('data.read');
      withKeys([fresh, old!]);
      const kids = (
        (await (await fetch(`${stack.url}/demo/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] }
      ).keys.map((key) => key.kid);
      expect(kids).toEqual(['rotated-key', old!.kid]);
      const after = await tokenFor('data.read');
      expect(JSON.parse(Buffer.from(after.split('.')[0]!, 'base64url').toString()).kid).toBe('rotated-key');
      expect((await get('/Data/getRowsCount/SUBJECT', bearer(before))).status).toBe(200);
      expect((await get('/Data/getRowsCount/SUBJECT', bearer(after))).status).toBe(200);
      // The old key removed: its tokens stop at once, though this instance had verified them.
      withKeys([fresh]);
      expect((await get('/Data/getRowsCount/SUBJECT', bearer(before))).status).toBe(401);
      expect((await get('/Data/getRowsCount/SUBJECT', bearer(after))).status).toBe(200);
    } finally {
      withKeys(local.tokenSigningKeys);
    }
  });
});

describe('scopes', () => {
  it('data.read:SUBJECT reads SUBJECT and nothing else; a source the tenant does not serve stays 404', async () => {
    const token = bearer(await tokenFor('data.read:SUBJECT'));
    for (const fn of ['getData', 'getRowsCount', 'getDataPaginate?fromRow=1&rows=2']) {
      const [name, query] = fn.split('?');
      expect((await get(`/Data/${name}/SUBJECT${query ? `?${query}` : ''}`, token)).status, fn).toBe(200);
    }
    const other = await get('/Data/getRowsCount/DOKUMENT', token);
    expect(other.status).toBe(403);
    expect(other.headers.get('www-authenticate')).toBe(
      'Bearer realm="demo", error="insufficient_scope", error_description="The token lacks the scope data.read:DOKUMENT", scope="data.read:DOKUMENT"',
    );
    expect(await errorOf(other)).toMatchObject({ code: 'insufficient_scope' });
    expect((await get('/Data/getRowsCount/NO_SUCH_TABLE', token)).status).toBe(404);
    // An internal table is never served: 404, not 403.
    expect((await get('/Data/getRowsCount/SVC_SUBSCRIPTION', token)).status).toBe(404);
    // Lower case names the same source.
    expect((await get('/Data/getRowsCount/subject', token)).status).toBe(200);
    // The description lists what the token may read.
    const described = (await (await get('/openapi.json', token)).json()) as { tags: { name: string }[] };
    // (SUBJECT's changes are recorded: the subscription routes are described, under their own tag.)
    expect(described.tags.map((tag) => tag.name)).toEqual(['SUBJECT', 'Subscriptions']);
  });

  it('each route refuses a token without its scope and serves one with it', async () => {
    const readOnly = bearer(await tokenFor('data.read'));
    const files = bearer(await tokenFor('files.read files.write'));
    const changes = bearer(await tokenFor('changes.read:SUBJECT'));
    // getChanges: changes.read (of the source).
    expect((await get('/Data/getChanges/SUBJECT?rows=1', readOnly)).status).toBe(403);
    expect((await get('/Data/getChanges/SUBJECT?rows=1', changes)).status).toBe(200);
    expect((await get('/Data/getChanges/DOKUMENT?rows=1', changes)).status).toBe(403);
    expect((await get('/Data/getRowsCount/SUBJECT', changes)).status).toBe(403);
    // Files: files.write and files.read.
    const form = new FormData();
    form.append('file', new Blob([Buffer.from('bearer note')], { type: 'text/plain' }), 'bearer.txt');
    const upload = (authorization: string) =>
      fetch(`${stack.url}/demo/JsonAPI/File/setFile`, {
        method: 'POST',
        headers: { authorization },
        body: form,
      });
    const refusedUpload = await upload(readOnly);
    expect(refusedUpload.status).toBe(403);
    expect(refusedUpload.headers.get('www-authenticate')).toContain('scope="files.write"');
    const stored = await upload(files);
    expect(stored.status, await stored.clone().text()).toBe(200);
    const guid = ((await stored.json()) as { fileGUID: string }).fileGUID;
    expect((await get(`/File/getFile/${guid}`, readOnly)).status).toBe(403);
    expect((await get(`/File/getFile/${guid}`, files)).status).toBe(200);
    expect((await get('/Data/getRowsCount/SUBJECT', files)).status).toBe(403);
    // Subscriptions: subscriptions.write, and changes.read of the source.
    const subscribe = (authorization: string, source: string) =>
      fetch(`${stack.url}/demo/JsonAPI/Subscriptions`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json' },
        body: JSON.stringify({ source, url: `${receiver.url}/bearer` }),
      });
    expect((await subscribe(changes, 'SUBJECT')).status).toBe(403);
    expect((await get('/Subscriptions', changes)).status).toBe(403);
    const writer = bearer(await tokenFor('subscriptions.write changes.read:SUBJECT'));
    expect((await subscribe(writer, 'DOKUMENT')).status).toBe(403);
    const created = await subscribe(writer, 'SUBJECT');
    expect(created.status, await created.clone().text()).toBe(201);
    const { id } = (await created.json()) as { id: string };
    // It belongs to the client: the Basic user does not see it, the client does.
    expect((await get(`/Subscriptions/${id}`, DEMO_AUTH)).status).toBe(404);
    expect((await get(`/Subscriptions/${id}`, writer)).status).toBe(200);
    const idsOf = async (authorization: string) =>
      (
        (await (await get('/Subscriptions', authorization)).json()) as { subscriptions: { id: string }[] }
      ).subscriptions.map((subscription) => subscription.id);
    expect(await idsOf(writer)).toContain(id);
    expect(await idsOf(DEMO_AUTH)).not.toContain(id);
    const removed = await fetch(`${stack.url}/demo/JsonAPI/Subscriptions/${id}`, {
      method: 'DELETE',
      headers: { authorization: writer },
    });
    expect(removed.status).toBe(204);
  });

  it('a Basic user keeps every scope; a tenant that turned Basic off refuses it', async () => {
    expect((await get('/Data/getRowsCount/DOKUMENT', DEMO_AUTH)).status).toBe(200);
    const refused = await get('/Data/getRowsCount/SUBJECT', DEMO_AUTH, 'bearer-only');
    expect(refused.status).toBe(401);
    expect(await errorOf(refused)).toMatchObject({
      code: 'bearer_token_required',
      message: expect.stringMatching(/requires a bearer token/),
    });
    expect(refused.headers.get('www-authenticate')).toBe('Bearer realm="bearer-only"');
    const anonymous = await get('/Data/getRowsCount/SUBJECT', undefined, 'bearer-only');
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer realm="bearer-only"');
    const token = bearer(await tokenFor('data.read', 'bearer-only'));
    expect((await get('/Data/getRowsCount/SUBJECT', token, 'bearer-only')).status).toBe(200);
    // Its description declares no Basic.
    const described = (await (await get('/openapi.json', token, 'bearer-only')).json()) as {
      components: {
        securitySchemes: Record<string, { flows?: { clientCredentials: { tokenUrl: string } } }>;
      };
    };
    expect(Object.keys(described.components.securitySchemes).sort()).toEqual(['bearerAuth', 'oauth2']);
    expect(described.components.securitySchemes.oauth2!.flows!.clientCredentials.tokenUrl).toBe(
      `${stack.url}/bearer-only/oauth2/token`,
    );
    // Clean under redocly's recommended rules as the Basic one is (data-api-reads.test.ts).
    expect(await redoclyProblemsOf(described)).toEqual([]);
  });
});

describe("a tenant's own identity provider", () => {
  it('accepts its tokens with the scopes of its roles claim, and follows its key rotation', async () => {
    const token = await idp.sign(idpKey, { roles: ['data.read:SUBJECT'], azp: 'entra-app' });
    expect((await get('/Data/getRowsCount/SUBJECT', bearer(token), 'idp')).status).toBe(200);
    expect((await get('/Data/getRowsCount/DOKUMENT', bearer(token), 'idp')).status).toBe(403);
    // Its tokens mean nothing to a tenant that does not trust it.
    expect((await get('/Data/getRowsCount/SUBJECT', bearer(token), 'demo')).status).toBe(401);
    // Issued more than the 60 s of skew ahead, though signed and unexpired: 401 invalid_token.
    const now = Math.floor(Date.now() / 1000);
    const ahead = await get(
      '/Data/getRowsCount/SUBJECT',
      bearer(await idp.sign(idpKey, { roles: ['data.read'], iat: now + 3600, exp: now + 3900 })),
      'idp',
    );
    expect(ahead.status).toBe(401);
    expect(await errorOf(ahead)).toMatchObject({ code: 'invalid_token' });
    const skewed = await idp.sign(idpKey, { roles: ['data.read'], iat: now + 30 });
    expect((await get('/Data/getRowsCount/SUBJECT', bearer(skewed), 'idp')).status).toBe(200);
    // A token of an issuer whose keys cannot be fetched: 503, and no keys were ever known.
    const unknown = await get(
      '/Data/getRowsCount/SUBJECT',
      bearer(await idp.sign(idpKey, { iss: 'https://login.example/t' })),
      'unreachable',
    );
    expect(unknown.status).toBe(503);
    expect(await errorOf(unknown)).toMatchObject({ code: 'identity_provider_unavailable' });
    // Down after the first fetch: its cached keys still check its tokens.
    idp.mode = 'down';
    try {
      expect((await get('/Data/getRowsCount/SUBJECT', bearer(token), 'idp')).status).toBe(200);
    } finally {
      idp.mode = 'up';
    }
  });
});

describe('hostile tokens', () => {
  it('are each 401 invalid_token with the same words, never a 5xx and never which part failed', async () => {
    const good = await tokenFor('data.read');
    const [head, body] = good.split('.');
    const claims = JSON.parse(Buffer.from(body!, 'base64url').toString()) as Record<string, unknown>;
    const jwks = (await (await fetch(`${stack.url}/demo/.well-known/jwks.json`)).json()) as {
      keys: { kid: string }[];
    };
    const kid = jwks.keys[0]!.kid;
    const attacker = await issuerKey(kid, 'ES256');
    const forge = (extra: Record<string, unknown>, header: Record<string, unknown> = {}) =>
      new SignJWT({ ...claims, ...extra })
        .setProtectedHeader({ alg: 'ES256', kid, ...header })
        .sign(attacker.privateKey);
    const now = Math.floor(Date.now() / 1000);
    const hostile: Record<string, string> = {
      'alg none': new UnsecuredJWT(claims).encode(),
      'HS256 keyed with the public key': await new SignJWT(claims)
        .setProtectedHeader({ alg: 'HS256', kid })
        .sign(Buffer.from(JSON.stringify(jwks.keys[0]))),
      'signed by another key with its kid': await forge({}),
      'its key in the header': await forge({}, { jwk: attacker.publicJwk }),
      'jku pointing elsewhere': await forge({}, { jku: `${idp.url}/jwks` }),
      'expired (a signature of our own stays out of reach: forged)': await forge({ exp: now - 3600 }),
      'wrong issuer': await forge({ iss: 'https://evil.example/demo' }),
      'a token of 8 KB': await forge({ padding: 'x'.repeat(8 * 1024) }),
      'kid with path characters': await forge({}, { kid: '../../../etc/passwd' }),
      'kid with SQL characters': await forge({}, { kid: "x'; DROP TABLE SUBJECT; --" }),
      'a signature altered': `${head}.${body}.${'A'.repeat(86)}`,
      'not a JWT': 'abc.def',
    };
    for (const [what, token] of Object.entries(hostile)) {
      const response = await get('/Data/getRowsCount/SUBJECT', bearer(token));
      expect(response.status, what).toBe(401);
      expect(response.headers.get('www-authenticate'), what).toBe(
        'Bearer realm="demo", error="invalid_token", error_description="The access token is not valid for this tenant"',
      );
      expect(await errorOf(response), what).toMatchObject({
        code: 'invalid_token',
        message: 'The access token is not valid for this tenant',
      });
    }
    // A scope that names a source the tenant does not serve grants nothing: 404 as for everyone.
    const scoped = await tokenFor('data.read:NO_SUCH_TABLE');
    expect((await get('/Data/getRowsCount/NO_SUCH_TABLE', bearer(scoped))).status).toBe(404);
    expect((await get('/Data/getRowsCount/SUBJECT', bearer(scoped))).status).toBe(403);
  });
});

describe('who called', () => {
  it('names the caller in every log line of the request: the Basic user, or the token’s client', async () => {
    const lines: [string, LogFields | undefined][] = [];
    const keep = (message: string, fields?: LogFields) => {
      lines.push([message, fields]);
    };
    // Noting each request line's caller for its access line, as the stack's own log does.
    useObservability({ log: notingErrorCodes({ debug: keep, info: keep, warn: keep, error: keep }) });
    const token = bearer(await tokenFor('data.read:SUBJECT'));
    await get('/Data/getRowsCount/SUBJECT', token);
    await get('/Data/getRowsCount/SUBJECT', DEMO_AUTH);
    await get('/Data/getRowsCount/DOKUMENT', token);
    const requests = lines.filter(([message]) => message === 'request').map(([, fields]) => fields);
    expect(requests).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          route: 'POST /{tenant}/oauth2/token',
          caller: 'client:demo-client',
          status: 200,
        }),
        expect.objectContaining({
          status: 200,
          caller: 'client:demo-client',
          route: expect.stringMatching(/getRowsCount/),
        }),
        expect.objectContaining({
          status: 200,
          caller: 'basic:demo',
          route: expect.stringMatching(/getRowsCount/),
        }),
        expect.objectContaining({
          status: 403,
          caller: 'client:demo-client',
          errorCode: 'insufficient_scope',
        }),
      ]),
    );
    // The access line of the local stack names it too.
    const access = lines.filter(([message]) => message === 'access').map(([, fields]) => fields);
    expect(access).toEqual(
      expect.arrayContaining([expect.objectContaining({ status: 403, caller: 'client:demo-client' })]),
    );
    // No token or secret in a line but the debug line of headers (which the log's redaction masks).
    const logged = JSON.stringify(lines.filter(([message]) => message !== 'request detail'));
    expect(logged).not.toContain(token.slice(7, 60));
    expect(logged).not.toContain(CLIENT.secret);
  });
});
