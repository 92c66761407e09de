import { describe, expect, it } from 'vitest';
import {
  type Caller,
  callerIdentity,
  holdsSourceScope,
  isScope,
  requireScope,
  scopeCovers,
  sourceGrant,
} from '../../shared/core/auth/caller.js';
import {
  type AccessTokenIssuer,
  type ClientSecretCheck,
  grantClientCredentials,
  OAuthError,
  secretFingerprint,
} from '../../shared/core/auth/client-credentials.js';
import { ServiceError } from '../../shared/core/errors.js';

const token = (...scopes: string[]): Caller => ({
  kind: 'bearer',
  issuer: 'https://gw.example/demo',
  client: 'c1',
  subject: 'c1',
  ownIssuer: true,
  scopes: new Set(scopes),
});
const SUBJECT = { schema: 'dbo', name: 'SUBJECT' };
const DOKUMENT = { schema: 'dbo', name: 'DOKUMENT' };

describe('scopes (CONTRACT 4d)', () => {
  it('knows the scopes and the source scopes, nothing else', () => {
    for (const scope of [
      'data.read',
      'data.read:SUBJECT',
      'data.read:dbo.SUBJECT',
      'files.read',
      'files.write',
      'changes.read',
      'changes.read:UCET',
      'subscriptions.write',
    ]) {
      expect(isScope(scope), scope).toBe(true);
    }
    for (const scope of [
      '',
      'admin',
      'data.read:',
      'data.read:a.b.c',
      "data.read:x'--",
      'files.read:SUBJECT',
      'subscriptions.write:X',
      'DATA.READ',
    ]) {
      expect(isScope(scope), scope).toBe(false);
    }
  });

  it('a family covers its source scopes; a source scope covers only itself', () => {
    expect(scopeCovers(['data.read'], 'data.read:SUBJECT')).toBe(true);
    expect(scopeCovers(['data.read:SUBJECT'], 'data.read')).toBe(false);
    expect(scopeCovers(['data.read:SUBJECT'], 'data.read:DOKUMENT')).toBe(false);
    expect(scopeCovers(['changes.read'], 'data.read:SUBJECT')).toBe(false);
  });

  it('a source scope names the source bare or qualified, any case; a Basic user holds everything', () => {
    expect(holdsSourceScope(token('data.read:subject'), 'data.read', SUBJECT)).toBe(true);
    expect(holdsSourceScope(token('data.read:dbo.SUBJECT'), 'data.read', SUBJECT)).toBe(true);
    expect(holdsSourceScope(token('data.read:other.SUBJECT'), 'data.read', SUBJECT)).toBe(false);
    expect(holdsSourceScope(token('data.read:SUBJECT'), 'data.read', DOKUMENT)).toBe(false);
    expect(holdsSourceScope(token('changes.read:SUBJECT'), 'data.read', SUBJECT)).toBe(false);
    expect(holdsSourceScope({ kind: 'basic', user: 'demo' }, 'changes.read', DOKUMENT)).toBe(true);
    const grant = sourceGrant(token('data.read:SUBJECT'), 'demo', 'data.read');
    expect(() => grant.check(SUBJECT)).not.toThrow();
    const refusal = (() => {
      try {
        grant.check(DOKUMENT);
      } catch (error) {
        return error as ServiceError;
      }
    })();
    expect(refusal).toBeInstanceOf(ServiceError);
    expect(refusal).toMatchObject({ status: 403, code: 'insufficient_scope' });
    expect(refusal?.headers?.['www-authenticate']).toContain('scope="data.read:DOKUMENT"');
  });

  it('a route asks for its scope, or one source scope of its family', () => {
    expect(() => requireScope(token('data.read:SUBJECT'), 'demo', 'data.read')).not.toThrow();
    expect(() => requireScope(token('files.read'), 'demo', 'data.read')).toThrow(/data.read/);
    expect(() => requireScope(token('files.read'), 'demo', 'files.write')).toThrow(/files.write/);
    expect(() => requireScope({ kind: 'basic', user: 'x' }, 'demo', 'subscriptions.write')).not.toThrow();
  });

  it('names the caller as the log and a subscription’s owner do', () => {
    expect(callerIdentity({ kind: 'basic', user: 'demo' })).toBe('basic:demo');
    expect(callerIdentity(token())).toBe('client:c1');
    expect(callerIdentity({ ...token(), ownIssuer: false, subject: 'abc' } as Caller)).toBe(
      'bearer:https://gw.example/demo abc',
    );
    const long = callerIdentity({ ...token(), ownIssuer: false, subject: 's'.repeat(400) } as Caller);
    expect(long).toMatch(/^bearer:sha256:[0-9a-f]{64}$/);
  });
});

describe('the client credentials grant (RFC 6749 section 4.4)', () => {
  const issued: unknown[] = [];
  const issuer: AccessTokenIssuer = {
    issue: async (claims) => {
      issued.push(claims);
      return { token: 'a.b.c', expiresIn: claims.lifetimeSeconds };
    },
  };
  const secrets: Record<string, string> = { c1: 's3cret' };
  const checked: string[] = [];
  const checkSecret: ClientSecretCheck = async (client, secret) => {
    checked.push(client?.clientId ?? '(none)');
    return client !== undefined && secrets[client.clientId] === secret ? client.secretHashes[0] : undefined;
  };
  const ctx = {
    clients: [{ clientId: 'c1', secretHashes: ['h'], scopes: ['data.read', 'files.read'] }],
    baseUrl: 'https://gw.example/demo',
    lifetimeSeconds: 900,
    checkSecret,
    issuer,
    now: 1_700_000_000_000,
  };
  const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
  const form = 'application/x-www-form-urlencoded';
  const ask = (body: string, authorization: string | null = basic('c1', 's3cret'), contentType = form) =>
    grantClientCredentials(ctx, { body, authorization: authorization ?? undefined, contentType });
  const fails = async (promise: Promise<unknown>, status: number, error: string) => {
    const thrown = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(thrown).toBeInstanceOf(OAuthError);
    expect(thrown).toMatchObject({ status, error });
  };

  it('issues for the client with its scopes, or the subset asked', async () => {
    await expect(ask('grant_type=client_credentials')).resolves.toEqual({
      access_token: 'a.b.c',
      token_type: 'Bearer',
      expires_in: 900,
      scope: 'data.read files.read',
    });
    expect(issued.at(-1)).toMatchObject({
      issuer: ctx.baseUrl,
      audience: ctx.baseUrl,
      clientId: 'c1',
      // The hash the secret matched, by a fingerprint that is not the hash.
      secretFingerprint: secretFingerprint('h'),
    });
    expect(secretFingerprint('h')).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(secretFingerprint('h')).not.toBe(secretFingerprint('h2'));
    await expect(ask('grant_type=client_credentials&scope=data.read%3ASUBJECT')).resolves.toMatchObject({
      scope: 'data.read:SUBJECT',
    });
    await expect(
      ask('grant_type=client_credentials&client_id=c1&client_secret=s3cret', null),
    ).resolves.toMatchObject({ scope: 'data.read files.read' });
    // Form-urlencoded in the header, as RFC 6749 section 2.3.1 says.
    secrets.c1 = 's3cret:+&';
    await expect(
      ask('grant_type=client_credentials', basic('c1', encodeURIComponent('s3cret:+&'))),
    ).resolves.toBeDefined();
    secrets.c1 = 's3cret';
  });

  it('refuses as section 5.2 says, checking the secret of an unknown client all the same', async () => {
    checked.length = 0;
    await fails(ask('grant_type=client_credentials', basic('nobody', 'x')), 401, 'invalid_client');
    expect(checked).toEqual(['(none)']);
    await fails(ask('grant_type=client_credentials', basic('c1', 'wrong')), 401, 'invalid_client');
    await fails(ask('grant_type=client_credentials', null), 401, 'invalid_client');
    await fails(ask('grant_type=client_credentials', 'Bearer x'), 401, 'invalid_client');
    await fails(ask('grant_type=authorization_code'), 400, 'unsupported_grant_type');
    // An unauthenticated caller learns nothing of grants: invalid_client first.
    await fails(ask('grant_type=authorization_code', basic('c1', 'wrong')), 401, 'invalid_client');
    await fails(ask(''), 400, 'invalid_request');
    await fails(ask('grant_type=client_credentials&grant_type=client_credentials'), 400, 'invalid_request');
    await fails(ask('{"grant_type":"client_credentials"}', null, 'application/json'), 400, 'invalid_request');
    await fails(ask(`grant_type=client_credentials&scope=${'x'.repeat(5000)}`), 400, 'invalid_request');
    await fails(ask('grant_type=client_credentials&client_secret=s3cret'), 400, 'invalid_request');
    await fails(ask('grant_type=client_credentials&client_id=other'), 400, 'invalid_request');
    await fails(ask('grant_type=client_credentials&scope=files.write'), 400, 'invalid_scope');
    await fails(ask('grant_type=client_credentials&scope=data.read%20admin'), 400, 'invalid_scope');
  });
});
