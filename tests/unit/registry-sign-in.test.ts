import { generateKeyPairSync } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { parseTenantRegistry } from '../../shared/config/tenants.js';
import { tokenSigningJwk } from '../support/token-keys.js';

const HASH = 'scrypt$16384$8$1$ZGVtby1jbGllbnQtc2FsdA==$itVDOfEtTgsYPt9Zho4WFLkFUaA8yvrVyRlgrdRKu1s=';
const tenant = (extra: Record<string, unknown>) => ({
  database: { kind: 'embedded', name: 'demo' },
  dataApiUsers: [{ name: 'demo', passwordHash: HASH }],
  dataSources: '*',
  ...extra,
});
const parse = (
  extra: Record<string, unknown>,
  outer: Record<string, unknown> = { tokenSigningKeys: [tokenSigningJwk()] },
) => parseTenantRegistry({ ...outer, tenants: { t: tenant(extra) } });
const client = { clientId: 'erp-sync', secretHashes: [HASH], scopes: ['data.read'] };

afterEach(() => {
  delete process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS;
});

describe('the registry’s sign-in settings (CONTRACT 4d)', () => {
  it('takes issuers, clients and dataApiAuth, with their defaults', () => {
    const parsed = parse({
      tokenIssuers: [
        {
          issuer: 'https://login.microsoftonline.com/t/v2.0',
          audience: 'api://gw',
          jwksUri: 'https://login.microsoftonline.com/t/discovery/v2.0/keys',
          scopeClaim: 'roles',
        },
      ],
      oauthClients: [client],
    }).get('t')!;
    expect(parsed.dataApiAuth).toEqual(['basic', 'bearer']);
    expect(parsed.tokenLifetimeSeconds).toBe(900);
    expect(parsed.tokenIssuers[0]!.scopeClaim).toBe('roles');
    expect(
      parse({ tokenIssuers: [{ issuer: 'i', audience: 'a', jwksUri: 'https://x/keys' }] }).get('t')!
        .tokenIssuers[0]!.scopeClaim,
    ).toBe('scope');
  });

  it('refuses each bad setting by its path', () => {
    const refused = (extra: Record<string, unknown>, path: RegExp, outer?: Record<string, unknown>) =>
      expect(() => parse(extra, outer)).toThrow(path);
    refused(
      { tokenIssuers: [{ issuer: 'i', audience: 'a', jwksUri: 'http://idp.example/keys' }] },
      /tenants\.t\.tokenIssuers\.0\.jwksUri: must be https/,
    );
    refused(
      { tokenIssuers: [{ issuer: 'i', audience: 'a', jwksUri: 'http://127.0.0.1:8080/keys' }] },
      /jwksUri: must be https/,
    );
    refused(
      { tokenIssuers: [{ issuer: 'i', audience: 'a', jwksUri: 'https://u:p@idp.example/keys' }] },
      /jwksUri: must not carry credentials/,
    );
    refused(
      { tokenIssuers: [{ issuer: 'i', audience: 'a', jwksUri: 'https://x/keys', scopeClaim: 'groups' }] },
      /scopeClaim/,
    );
    refused(
      { oauthClients: [{ ...client, scopes: ['admin'] }] },
      /oauthClients\.0\.scopes\.0: must be one of/,
    );
    refused(
      { oauthClients: [{ ...client, secretHashes: ['plain-text'] }] },
      /secretHashes\.0: must be an scrypt hash/,
    );
    refused({ oauthClients: [{ ...client, secretHashes: [HASH, HASH, HASH] }] }, /secretHashes/);
    refused({ oauthClients: [client, client] }, /oauthClients: each clientId once/);
    refused({ oauthClients: [{ ...client, clientId: 'has space' }] }, /clientId/);
    refused({ dataApiAuth: [] }, /dataApiAuth/);
    refused({ dataApiAuth: ['digest'] }, /dataApiAuth/);
    refused({ tokenLifetimeSeconds: 86_400 }, /tokenLifetimeSeconds/);
    refused(
      { oauthClients: [client] },
      /tenants\.t\.oauthClients: needs the registry's tokenSigningKeys/,
      {},
    );
    // Keys: private, of a type that signs an allowed algorithm, each kid once.
    const publicOnly = { ...tokenSigningJwk('p') };
    delete publicOnly.d;
    refused({}, /tokenSigningKeys\.0: must be a private key/, { tokenSigningKeys: [publicOnly] });
    const secp384 = {
      ...generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey.export({ format: 'jwk' }),
      kid: 'k',
    };
    refused({}, /tokenSigningKeys\.0: must be an EC P-256, Ed25519 or RSA/, { tokenSigningKeys: [secp384] });
    refused({}, /tokenSigningKeys: each kid once/, {
      tokenSigningKeys: [tokenSigningJwk('a'), tokenSigningJwk('a')],
    });
    // The registry's error never shows the key.
    try {
      parse({}, { tokenSigningKeys: [publicOnly] });
    } catch (error) {
      expect(String(error)).not.toContain(String(publicOnly.x));
    }
  });

  it('takes an http key set on loopback only where WEBHOOK_ALLOW_PRIVATE_TARGETS is true (the local stack)', () => {
    process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS = 'true';
    expect(() =>
      parse({ tokenIssuers: [{ issuer: 'i', audience: 'a', jwksUri: 'http://127.0.0.1:8080/keys' }] }),
    ).not.toThrow();
    expect(() =>
      parse({ tokenIssuers: [{ issuer: 'i', audience: 'a', jwksUri: 'http://10.0.0.5/keys' }] }),
    ).toThrow(/must be https/);
  });

  it('refuses an https key set at a loopback, private, link-local or metadata IP address, unless WEBHOOK_ALLOW_PRIVATE_TARGETS', () => {
    const at = (jwksUri: string) => () => parse({ tokenIssuers: [{ issuer: 'i', audience: 'a', jwksUri }] });
    const refusals = {
      'https://169.254.169.254/latest/meta-data': 'link-local',
      'https://[fd00:ec2::254]/keys': 'private',
      'https://10.1.2.3/keys': 'private',
      'https://192.168.0.10:8443/keys': 'private',
      'https://127.0.0.1/keys': 'loopback',
      'https://[::1]/keys': 'loopback',
      'https://[::ffff:169.254.169.254]/keys': 'link-local',
      // The URL parser reads a number as an IPv4 address: 2852039166 is 169.254.169.254.
      'https://2852039166/keys': 'link-local',
    };
    for (const [jwksUri, reason] of Object.entries(refusals)) {
      expect(at(jwksUri), jwksUri).toThrow(
        new RegExp(`tenants\\.t\\.tokenIssuers\\.0\\.jwksUri: must not be at address .*, which is ${reason}`),
      );
    }
    // A public address, or a name (judged on what it resolves to when fetched), is taken.
    expect(at('https://203.0.114.7/keys')).not.toThrow();
    expect(at('https://login.microsoftonline.com/t/discovery/v2.0/keys')).not.toThrow();
    // The local allowance: a loopback issuer over https too.
    process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS = 'true';
    for (const jwksUri of Object.keys(refusals)) expect(at(jwksUri), jwksUri).not.toThrow();
  });

  it('takes Ed25519 and RSA keys as well', () => {
    const ed = { ...generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' }), kid: 'ed' };
    const rsa = {
      ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }),
      kid: 'rsa',
    };
    expect(() => parse({ oauthClients: [client] }, { tokenSigningKeys: [ed, rsa] })).not.toThrow();
  });
});
