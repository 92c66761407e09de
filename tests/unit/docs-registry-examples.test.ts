import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { readServerlessConfig, resolveParams } from '../../infra/local/serverless-config.js';
import { resetSettings } from '../../shared/config/settings.js';
import { parseTenantRegistry } from '../../shared/config/tenants.js';
import { TEST_TOKEN_KEY } from '../support/token-keys.js';

/**
 * Every JSON value docs/configuration.md gives as an example of a tenant's registry key (its table
 * "key | meaning") is one the registry takes at the documented defaults: set on the demo tenant of
 * infra/local/tenants.json, with each function's reserved concurrency as a deploy without --param
 * has it. (The fourth round met `"limits": {"concurrentRequests": 16, …}`, refused at start.)
 */
const page = readFileSync('docs/configuration.md', 'utf8');
const examples = [...page.matchAll(/^\| `([A-Za-z]+)` +\|([^\n]*)$/gm)].flatMap(([, key, meaning]) =>
  [...meaning!.matchAll(/`(\{[^`]*\}|\[[^`]*\])`/g)].map((match) => ({ key: key!, json: match[1]! })),
);

afterEach(() => {
  delete process.env.REQUEST_FUNCTION_CONCURRENCY;
  resetSettings();
});

describe('docs/configuration.md, the registry keys’ examples', () => {
  it('finds the examples (limits and hiddenColumns among them)', () => {
    expect(examples.map((example) => example.key)).toEqual(
      expect.arrayContaining(['limits', 'hiddenColumns']),
    );
  });

  it.each(examples)('$key: $json is taken at the defaults', ({ key, json }) => {
    process.env.REQUEST_FUNCTION_CONCURRENCY = resolveParams(
      readServerlessConfig(),
      '${param:requestFunctionConcurrency}',
    );
    resetSettings();
    const registry = JSON.parse(readFileSync('infra/local/tenants.json', 'utf8')) as {
      tenants: Record<string, Record<string, unknown>>;
    };
    registry.tenants.demo![key] = JSON.parse(json);
    // The stack adds a signing key where the file names none (infra/local/stack.ts withSigningKey).
    expect(() =>
      parseTenantRegistry({
        pagingCursorKeys: ['k'.repeat(48)],
        tokenSigningKeys: [TEST_TOKEN_KEY],
        ...registry,
      }),
    ).not.toThrow();
    // And the test would see a refusal: the old example, above the reserved concurrency.
    if (key === 'limits') {
      registry.tenants.demo!.limits = { concurrentRequests: 64 };
      expect(() =>
        parseTenantRegistry({
          pagingCursorKeys: ['k'.repeat(48)],
          tokenSigningKeys: [TEST_TOKEN_KEY],
          ...registry,
        }),
      ).toThrow(/tenants\.demo\.limits\.concurrentRequests: must be below/);
    }
  });
});

describe('docs/configuration.md, the environment table', () => {
  it("gives REQUEST_FUNCTION_CONCURRENCY's default as the deployment and the local stack have it", () => {
    const row = /^\| `REQUEST_FUNCTION_CONCURRENCY` +\| ([^|]*)\|/m.exec(page);
    const deployed = resolveParams(readServerlessConfig(), `\${param:requestFunctionConcurrency}`);
    // The fifth round found 10 here, where serverless.yml (and so npm start) has 64.
    expect(row?.[1]?.trim().split(' ')[0]).toBe(deployed);
  });
});
