import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { resetSettings } from '../../shared/config/settings.js';
import {
  EARLY_READ_INTERVAL_MS,
  findTenant,
  loadTenantRegistry,
  setTenantRegistry,
} from '../../shared/config/tenants.js';
import { type AwsJsonEndpoint, startAwsJsonEndpoint } from '../support/aws-json-endpoint.js';

/**
 * The registry as a function reads it in Lambda: from Secrets Manager through Powertools
 * Parameters (here a stand-in of the Secrets Manager API on loopback, signed with dummy
 * credentials), read again once older than TENANT_REGISTRY_MAX_AGE_SECONDS, early for an unknown
 * tenant at most once per EARLY_READ_INTERVAL_MS, and kept when a new read does not validate.
 */

const SECRET = 'erp-gateway/test/tenant-registry';
const original = JSON.parse(readFileSync('infra/local/tenants.json', 'utf8')) as {
  tenants: Record<string, unknown>;
};
const secrets = new Map<string, string>([[SECRET, JSON.stringify(original)]]);
let endpoint: AwsJsonEndpoint;
const reads = () => endpoint.calls.filter((call) => call.target === 'secretsmanager.GetSecretValue').length;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const errors: Record<string, unknown>[] = [];
const log = { error: (_message: string, fields: Record<string, unknown> = {}) => errors.push(fields) };

beforeAll(async () => {
  endpoint = await startAwsJsonEndpoint(secrets);
  vi.stubEnv('TENANT_REGISTRY_FILE', '');
  vi.stubEnv('TENANT_REGISTRY_SECRET_ID', SECRET);
  vi.stubEnv('TENANT_REGISTRY_MAX_AGE_SECONDS', '1');
  vi.stubEnv('AWS_ENDPOINT_URL_SECRETS_MANAGER', endpoint.url);
  vi.stubEnv('AWS_REGION', 'eu-central-1');
  vi.stubEnv('AWS_ACCESS_KEY_ID', 'AKIATEST');
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'test');
  resetSettings();
  setTenantRegistry(undefined);
});

afterAll(async () => {
  vi.unstubAllEnvs();
  resetSettings();
  setTenantRegistry(undefined);
  await endpoint?.close();
});

describe('tenant registry in Secrets Manager', () => {
  it('reads once, then answers from memory within the max age (no call per request)', async () => {
    expect((await loadTenantRegistry(log)).ids()).toEqual(['demo']);
    for (let i = 0; i < 20; i++) await loadTenantRegistry(log);
    expect(reads()).toBe(1);
  });

  it('reads early for an unknown tenant, at most once per interval', async () => {
    const before = reads();
    expect(await findTenant('acme', log)).toBeUndefined();
    expect(await findTenant('acme', log)).toBeUndefined();
    expect(reads()).toBe(before + 1);
    secrets.set(SECRET, JSON.stringify({ tenants: { ...original.tenants, acme: original.tenants.demo } }));
    await sleep(EARLY_READ_INTERVAL_MS + 50);
    expect((await findTenant('acme', log))?.id).toBe('acme');
    expect(reads()).toBe(before + 2);
  });

  it('reads again once the registry is older than the max age', async () => {
    const before = reads();
    secrets.set(SECRET, JSON.stringify(original));
    await sleep(1100);
    expect((await loadTenantRegistry(log)).ids()).toEqual(['demo']);
    expect(reads()).toBe(before + 1);
  });

  it('keeps the registry in force when a new read does not validate, and says where', async () => {
    secrets.set(
      SECRET,
      JSON.stringify({ tenants: { demo: { ...(original.tenants.demo as object), dataSources: 7 } } }),
    );
    await sleep(1100);
    expect((await loadTenantRegistry(log)).get('demo')?.dataSources).toBe('*');
    expect(JSON.stringify(errors)).toContain('tenants.demo.dataSources');
    expect(errors.at(-1)?.source).toBe('TENANT_REGISTRY_SECRET_ID');
    secrets.set(SECRET, '{not json');
    await sleep(1100);
    expect((await loadTenantRegistry(log)).ids()).toEqual(['demo']);
    expect(JSON.stringify(errors.at(-1))).toContain('not valid JSON');
  });
});
