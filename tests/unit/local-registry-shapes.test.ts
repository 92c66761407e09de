import { describe, expect, it } from 'vitest';
import { withDemoConnection } from '../../infra/local/demo-database.js';
import { withSigningKey } from '../../infra/local/stack.js';
import { parseTenantRegistry } from '../../shared/config/tenants.js';

/**
 * The local stack fills in its registry file (the demo database's connection, its signing key) only
 * where the file has the shape the registry's validator accepts: any other shape reaches the same
 * validator as written, so the stack refuses what Lambda refuses, naming the path.
 */
const connection = { kind: 'embedded', name: 'demo' } as const;
const local = (document: unknown) => withDemoConnection(withSigningKey(document, 'k'.repeat(32)), connection);

describe('The local stack reads its registry file as Lambda does', () => {
  it('leaves a shape the validator refuses as written, so that it is refused with its path', () => {
    const tenant = { database: connection, dataApiUsers: [], dataSources: '*' };
    for (const [document, path] of [
      [[{ tenants: {} }], '(root)'],
      [{ tenants: [tenant] }, 'tenants'],
      [{ tenants: { demo: [tenant] } }, 'tenants.demo'],
      ['{"tenants":{}}', '(root)'],
    ] as const) {
      expect(local(document)).toEqual(
        typeof document === 'object' && !Array.isArray(document)
          ? { pagingCursorKeys: ['k'.repeat(32)], ...document }
          : document,
      );
      expect(() => parseTenantRegistry(local(document)), JSON.stringify(document)).toThrow(`${path}:`);
    }
  });

  it('adds its own signing key only where the file names none', () => {
    expect(withSigningKey({ tenants: {} }, 'k'.repeat(32))).toEqual({
      pagingCursorKeys: ['k'.repeat(32)],
      tenants: {},
    });
    expect(withSigningKey({ pagingCursorKey: 'x'.repeat(32), tenants: {} }, 'k'.repeat(32))).toEqual({
      pagingCursorKey: 'x'.repeat(32),
      tenants: {},
    });
  });
});
