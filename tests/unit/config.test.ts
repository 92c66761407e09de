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

  it('keys each tenant’s cursors apart, from pagingCursorKey when given (at least 32 characters), else from its users’ hashes', () => {
    const key = 'k'.repeat(32);
    const keyed = parseTenantRegistry({ pagingCursorKey: key, tenants: { a: tenant, b: tenant } });
    const again = parseTenantRegistry({ pagingCursorKey: key, tenants: { a: tenant } });
    expect(keyed.get('a')!.cursorKey).toMatch(/^[0-9a-f]{64}$/);
    expect(keyed.get('a')!.cursorKey).not.toBe(keyed.get('b')!.cursorKey);
    expect(again.get('a')!.cursorKey).toBe(keyed.get('a')!.cursorKey);
    const derived = parseTenantRegistry({ tenants: { a: tenant } });
    expect(derived.get('a')!.cursorKey).not.toBe(keyed.get('a')!.cursorKey);
    expect(() => parseTenantRegistry({ pagingCursorKey: 'short', tenants: { a: tenant } })).toThrow(
      /pagingCursorKey/,
    );
  });
});
