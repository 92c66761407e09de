import { afterEach, describe, expect, it } from 'vitest';
import { ConfigurationError, getSettings, resetSettings } from '../../shared/config/settings.js';
import { parseTenantRegistry } from '../../shared/config/tenants.js';
import { hashPassword, verifyPassword } from '../../shared/core/passwords.js';

const HASH = 'scrypt$16384$8$1$ZGVtby10ZW5hbnQtc2FsdA==$x2bp48ourmNi7AJz+st/kNLkTjPJ/XnX7NIpiDrZ8ig=';
const tenant = {
  database: { kind: 'embedded', name: 'demo' },
  dataApiUsers: [{ name: 'demo', passwordHash: HASH }],
  dataSources: '*',
};

describe('Function: parseTenantRegistry', () => {
  it('fills the Web API defaults of the contract', () => {
    const registry = parseTenantRegistry({ tenants: { demo: tenant } });
    expect(registry.get('demo')?.webApi).toEqual({
      CommandTimeoutAsync: 20,
      RequestMaxSecValidity: 300,
      CheckReplayRequest: true,
      ReplayRequestTime: 300,
      DefContentType: 'application/json',
      // No application: every key is 401/102 until the registry lists one (CONTRACT.md section 2).
      applications: [],
    });
    expect(registry.get('demo')?.id).toBe('demo');
    expect(registry.get('other')).toBeUndefined();
    expect(Object.isFrozen(registry.get('demo'))).toBe(true);
  });

  it('names every bad setting', () => {
    const bad = {
      tenants: {
        demo: {
          ...tenant,
          dataApiUsers: [{ name: 'demo', passwordHash: 'plain-text' }],
          dataSources: ['x;y'],
        },
      },
    };
    expect(() => parseTenantRegistry(bad)).toThrow(ConfigurationError);
    expect(() => parseTenantRegistry(bad)).toThrow(
      /tenants\.demo\.dataApiUsers\.0\.passwordHash.*tenants\.demo\.dataSources/,
    );
  });

  it('refuses unknown keys and a timeout above the HTTP API limit', () => {
    expect(() => parseTenantRegistry({ tenants: { demo: { ...tenant, extra: 1 } } })).toThrow(/extra/);
    expect(() =>
      parseTenantRegistry({ tenants: { demo: { ...tenant, webApi: { CommandTimeoutAsync: 60 } } } }),
    ).toThrow(/CommandTimeoutAsync/);
  });
});

describe('Function: getSettings', () => {
  afterEach(() => {
    delete process.env.INLINE_LIMIT_BYTES;
    resetSettings();
  });

  it('defaults the inline limit to 5 MB', () => {
    resetSettings();
    expect(getSettings().inlineLimitBytes).toBe(5 * 1024 * 1024);
  });

  it('fails with the setting name on a bad value', () => {
    process.env.INLINE_LIMIT_BYTES = 'lots';
    resetSettings();
    expect(() => getSettings()).toThrow(/INLINE_LIMIT_BYTES/);
  });
});

describe('Function: verifyPassword', () => {
  it('accepts the demo password and refuses others', async () => {
    expect(await verifyPassword('demo-password', HASH)).toBe(true);
    expect(await verifyPassword('demo-passwor', HASH)).toBe(false);
    expect(await verifyPassword('demo-password', 'garbage')).toBe(false);
  });

  it('round-trips a new hash', async () => {
    const hash = await hashPassword('s3cret');
    expect(hash).toMatch(/^scrypt\$16384\$8\$1\$/);
    expect(await verifyPassword('s3cret', hash)).toBe(true);
  });
});

describe('Tenant registry: hidden columns and the paging cursor key (CONTRACT 4a)', () => {
  it('takes hiddenColumns per data source (NAME or schema.NAME), none by default', () => {
    const registry = parseTenantRegistry({
      tenants: {
        a: { ...tenant, hiddenColumns: { SUBJECT: ['SECRET_WEBHOOK'], 'dbo.UCET': ['X'] } },
        b: tenant,
      },
    });
    expect(registry.get('a')!.hiddenColumns).toEqual({ SUBJECT: ['SECRET_WEBHOOK'], 'dbo.UCET': ['X'] });
    expect(registry.get('b')!.hiddenColumns).toEqual({});
    expect(() =>
      parseTenantRegistry({ tenants: { a: { ...tenant, hiddenColumns: { 'not a name': ['X'] } } } }),
    ).toThrow(/hiddenColumns/);
    expect(() =>
      parseTenantRegistry({ tenants: { a: { ...tenant, hiddenColumns: { SUBJECT: [''] } } } }),
    ).toThrow(/hiddenColumns\.SUBJECT/);
  });

  it('takes the signing keys as given, newest first (pagingCursorKeys, or one pagingCursorKey), never derived', () => {
    const [newer, older] = ['n'.repeat(32), 'o'.repeat(40)];
    const rotated = parseTenantRegistry({
      pagingCursorKeys: [newer, older],
      tenants: { a: tenant, b: tenant },
    });
    expect(rotated.get('a')!.signingKeys).toEqual([newer, older]);
    expect(rotated.get('b')!.signingKeys).toEqual([newer, older]);
    expect(
      parseTenantRegistry({ pagingCursorKey: newer, tenants: { a: tenant } }).get('a')!.signingKeys,
    ).toEqual([newer]);
    // Without a key there is none: nothing stands in for it (pages then link by fromRow).
    expect(parseTenantRegistry({ tenants: { a: tenant } }).get('a')!.signingKeys).toEqual([]);
    expect(() => parseTenantRegistry({ pagingCursorKey: 'short', tenants: { a: tenant } })).toThrow(
      /pagingCursorKey: must be at least 32 characters/,
    );
    expect(() => parseTenantRegistry({ pagingCursorKeys: [newer, 'short'], tenants: { a: tenant } })).toThrow(
      /pagingCursorKeys\.1: must be at least 32 characters/,
    );
    expect(() => parseTenantRegistry({ pagingCursorKeys: [], tenants: { a: tenant } })).toThrow(
      /pagingCursorKeys/,
    );
    expect(() =>
      parseTenantRegistry({ pagingCursorKey: newer, pagingCursorKeys: [newer], tenants: { a: tenant } }),
    ).toThrow(/give the signing keys once/);
  });

  it('refuses a change feed without signing keys, naming the tenant', () => {
    expect(() => parseTenantRegistry({ tenants: { a: { ...tenant, changeFeed: ['SUBJECT'] } } })).toThrow(
      /tenants\.a\.changeFeed: needs the registry's pagingCursorKeys/,
    );
    expect(
      parseTenantRegistry({
        pagingCursorKeys: ['k'.repeat(32)],
        tenants: { a: { ...tenant, changeFeed: ['SUBJECT'] } },
      }).get('a')!.changeFeed,
    ).toEqual(['SUBJECT']);
  });

  it('refuses "__proto__" as a tenant or any other name, by its path, instead of losing it', () => {
    for (const [text, path] of [
      [
        `{"tenants":{"__proto__":${JSON.stringify(tenant)},"a":${JSON.stringify(tenant)}}}`,
        'tenants.__proto__',
      ],
      [
        `{"tenants":{"a":${JSON.stringify(tenant)},"__proto__":${JSON.stringify(tenant)}}}`,
        'tenants.__proto__',
      ],
      [`{"__proto__":{},"tenants":{"a":${JSON.stringify(tenant)}}}`, '__proto__'],
      [
        `{"tenants":{"a":${JSON.stringify({ ...tenant, hiddenColumns: {} }).replace('"hiddenColumns":{}', '"hiddenColumns":{"__proto__":["X"]}')}}}`,
        'tenants.a.hiddenColumns.__proto__',
      ],
    ] as const) {
      expect(() => parseTenantRegistry(JSON.parse(text)), path).toThrow(
        `${path}: "__proto__" is not allowed as a name`,
      );
    }
    // Names an object has from its prototype are tenants like any other, found only when given.
    const plain = parseTenantRegistry({ tenants: { constructor: tenant } });
    expect(plain.ids()).toEqual(['constructor']);
    expect(parseTenantRegistry({ tenants: { a: tenant } }).get('constructor')).toBeUndefined();
  });
});
