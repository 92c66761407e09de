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

describe('Tenant registry: Web API applications (CONTRACT.md section 2)', () => {
  const withApplications = (applications: unknown, database: unknown = tenant.database) => ({
    ...tenant,
    database,
    webApi: { applications },
  });
  const problemsOf = (registry: unknown) => {
    try {
      parseTenantRegistry(registry);
    } catch (error) {
      return (error as Error).message;
    }
    return '';
  };
  const app = (id: number, apiKey: string, apiHashes: unknown = [`${apiKey}-hash`]) => ({
    id,
    apiKey,
    apiHashes,
  });

  it('takes applications with a key, API hashes (several while one is rotated) and active (default true)', () => {
    const registry = parseTenantRegistry({
      tenants: {
        demo: withApplications([
          app(1, 'demo-api-key', ['new-hash', 'old-hash']),
          { ...app(2, 'b'), active: false },
        ]),
      },
    });
    expect(registry.get('demo')?.webApi.applications).toEqual([
      { id: 1, apiKey: 'demo-api-key', apiHashes: ['new-hash', 'old-hash'], active: true },
      { id: 2, apiKey: 'b', apiHashes: ['b-hash'], active: false },
    ]);
    expect(Object.isFrozen(registry.get('demo')?.webApi.applications)).toBe(true);
  });

  it('refuses an id or a key given twice within a tenant, and no or empty API hashes, by path, never quoting a key or hash', () => {
    const message = problemsOf({
      tenants: {
        demo: withApplications([
          app(1, 'secret-key-one', ['secret-hash-one']),
          app(1, 'secret-key-two'),
          app(3, 'secret-key-one'),
          app(4, 'd', []),
          app(5, 'e', ['']),
          app(6, 'has space'),
        ]),
      },
    });
    expect(message).toContain('tenants.demo.webApi.applications.1.id: 1 is also the id of applications.0');
    expect(message).toContain(
      'tenants.demo.webApi.applications.2.apiKey: is also the apiKey of applications.0: each key once',
    );
    expect(message).toContain('tenants.demo.webApi.applications.3.apiHashes: give at least one API hash');
    expect(message).toContain('tenants.demo.webApi.applications.4.apiHashes.0: must not be empty');
    expect(message).toContain(
      'tenants.demo.webApi.applications.5.apiKey: must be 1 to 200 visible ASCII characters',
    );
    expect(message).not.toMatch(/secret-key|secret-hash/);
  });

  it("takes the ERP's register instead: dbo.WS_APPLICATION, the one layout read, and nothing else", () => {
    const registry = parseTenantRegistry({
      tenants: { demo: withApplications({ erpTable: 'dbo.WS_APPLICATION' }) },
    });
    expect(registry.get('demo')?.webApi.applications).toEqual({ erpTable: 'dbo.WS_APPLICATION' });
    expect(problemsOf({ tenants: { demo: withApplications({ erpTable: 'dbo.PARTNERS' }) } })).toContain(
      'tenants.demo.webApi.applications.erpTable: must be dbo.WS_APPLICATION',
    );
    expect(
      problemsOf({ tenants: { demo: withApplications({ erpTable: 'WS_APPLICATION', more: 1 }) } }),
    ).toMatch(/tenants\.demo\.webApi\.applications: .*more/);
    expect(problemsOf({ tenants: { demo: withApplications('WS_APPLICATION') } })).toContain(
      'tenants.demo.webApi.applications:',
    );
  });

  it('refuses two applications of one id in tenants that share a database, unless they are one application', () => {
    const erp = (name: string) => ({
      kind: 'mssql',
      connectionString: `Server=sql.acme.internal,1433;Database=${name};User Id=svc;Password=x`,
    });
    const shared = problemsOf({
      tenants: {
        alfa: withApplications([app(1, 'alfa-key')], erp('ERP')),
        beta: withApplications([app(2, 'beta-key'), app(1, 'beta-key-1')], {
          ...erp('erp'),
          connectionString: 'Server=SQL.acme.internal,1433;Initial Catalog=erp;User Id=other;Password=y',
        }),
      },
    });
    expect(shared).toContain(
      'tenants.beta.webApi.applications.1.id: 1 is also the id of another application of tenant alfa, which shares its database',
    );
    // Another database, or one integrator listed by both companies: no problem.
    expect(
      problemsOf({
        tenants: {
          alfa: withApplications([app(1, 'alfa-key')], erp('ERP_ALFA')),
          beta: withApplications([app(1, 'beta-key')], erp('ERP_BETA')),
          gama: withApplications([app(1, 'alfa-key')], erp('ERP_ALFA')),
        },
      }),
    ).toBe('');
  });
});

describe('Tenant registry: change feed tables whose derived names would pass the identifier limit', () => {
  const KEYS = { pagingCursorKeys: ['k'.repeat(32)] };
  const recording = (table: string, database: unknown) => ({
    ...KEYS,
    tenants: { demo: { ...tenant, database, changeFeed: ['SUBJECT', `dbo.${table}`] } },
  });
  const mssql = { kind: 'mssql', connectionString: 'Server=sql,1433;Database=ERP;User Id=svc;Password=x' };
  const named = (length: number) => `T${'X'.repeat(length - 1)}`;

  it('takes a name of up to 107 characters on SQL Server and refuses 108, naming the table, the path and the limit', () => {
    expect(parseTenantRegistry(recording(named(107), mssql)).get('demo')?.changeFeed).toHaveLength(2);
    expect(() => parseTenantRegistry(recording(named(108), mssql))).toThrow(
      `tenants.demo.changeFeed.1: the change feed cannot record table ${named(108)}: its name has 108 characters, and the names derived from it (the longest, IX_SVC_CHANGES_<table>_BATCH, 21 more) would pass SQL Server's limit of 128 characters: a recorded table's name may have at most 107 characters`,
    );
  });

  it("takes up to 42 bytes on the embedded database (PostgreSQL's 63) and refuses 43", () => {
    const embedded = { kind: 'embedded', name: 'demo' };
    expect(parseTenantRegistry(recording(named(42), embedded)).get('demo')?.changeFeed).toHaveLength(2);
    expect(() => parseTenantRegistry(recording(named(43), embedded))).toThrow(
      /tenants\.demo\.changeFeed\.1: the change feed cannot record table TX+: its name has 43 bytes, .* the embedded database \(PostgreSQL\)'s limit of 63 bytes: a recorded table's name may have at most 42 bytes/,
    );
  });
});

describe('Tenant registry: how long exactly once keeps a key (CONTRACT 5a)', () => {
  const withRetention = (hours: unknown) => ({
    tenants: { demo: { ...tenant, idempotencyRetentionHours: hours } },
  });

  it('keeps a key 24 hours unless the tenant says otherwise', () => {
    expect(parseTenantRegistry({ tenants: { demo: tenant } }).get('demo')).toMatchObject({
      idempotencyRetentionHours: 24,
    });
    for (const hours of [1, 48, 720]) {
      expect(parseTenantRegistry(withRetention(hours)).get('demo')).toMatchObject({
        idempotencyRetentionHours: hours,
      });
    }
  });

  it('refuses anything but whole hours from 1 to 720 (30 days), naming the setting', () => {
    for (const hours of [0, -1, 721, 1.5, '24', null]) {
      expect(() => parseTenantRegistry(withRetention(hours)), String(hours)).toThrow(
        /tenants\.demo\.idempotencyRetentionHours/,
      );
    }
  });
});
