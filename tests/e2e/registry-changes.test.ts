import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { EARLY_READ_INTERVAL_MS } from '../../shared/config/tenant-registry.js';
import type { Log } from '../../shared/core/log.js';
import { hashPassword } from '../../shared/core/passwords.js';
import { serviceLog, useObservability } from '../../shared/lambda/observability.js';
import { DEMO_AUTH } from '../support/demo.js';

/**
 * Tenant changes without a redeploy (CONTRACT.md section 2): the local stack reads its registry
 * file again as a function reads the secret, every TENANT_REGISTRY_MAX_AGE_SECONDS and early for a
 * tenant it does not know. Each change is made by editing the file while the stack runs.
 */

const MAX_AGE_SECONDS = 2;
type Registry = { tenants: Record<string, { dataApiUsers: { name: string; passwordHash: string }[] }> };

let stack: LocalStack;
let dir: string;
let file: string;
let original: Registry;
const refusedReads: Record<string, unknown>[] = [];
let previousLog: Log;

const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const rowsCount = (tenant: string, authorization: string) =>
  fetch(`${stack.url}/${tenant}/JsonAPI/Data/getRowsCount/SUBJECT`, { headers: { authorization } }).then(
    (response) => response.status,
  );
const edit = async (change: (registry: Registry) => void) => {
  const registry = JSON.parse(await readFile(file, 'utf8')) as Registry;
  change(registry);
  await writeFile(file, JSON.stringify(registry));
};
/** Asks until the answer is `expected`; fails if it is not by `maxMs` (the max age and a margin). */
async function within(maxMs: number, ask: () => Promise<number>, expected: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    const status = await ask();
    if (status === expected) return Date.now() - started;
    if (Date.now() - started > maxMs)
      throw new Error(`still ${status} after ${maxMs} ms, expected ${expected}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'registry-changes-'));
  file = join(dir, 'tenants.json');
  original = JSON.parse(await readFile('infra/local/tenants.json', 'utf8')) as Registry;
  await writeFile(file, JSON.stringify(original));
  process.env.TENANT_REGISTRY_FILE = file;
  stack = await startLocalStack({
    port: 0,
    database: 'embedded',
    env: { TENANT_REGISTRY_MAX_AGE_SECONDS: String(MAX_AGE_SECONDS) },
  });
  previousLog = serviceLog();
  useObservability({
    log: {
      ...previousLog,
      error: (message: string, fields: Record<string, unknown> = {}) => {
        if (message.startsWith('tenant registry')) refusedReads.push(fields);
        previousLog.error(message, fields);
      },
    } as Log,
  });
});

afterAll(async () => {
  useObservability({ log: previousLog });
  await stack?.stop();
  delete process.env.TENANT_REGISTRY_FILE;
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('tenant changes while the stack runs', () => {
  it('serves a tenant added to the registry on its first request (an early read for an unknown tenant)', async () => {
    expect(await rowsCount('acme', DEMO_AUTH)).toBe(404);
    // The early read that 404 made counts against the rate limit: the next may come after it.
    await sleep(EARLY_READ_INTERVAL_MS + 100);
    await edit((registry) => {
      registry.tenants.acme = structuredClone(original.tenants.demo!);
    });
    expect(await rowsCount('acme', DEMO_AUTH)).toBe(200);
  });

  it("describes getChanges only for tables whose recording the database has, whatever the registry's changeFeed lists", async () => {
    type Description = { paths: Record<string, unknown> };
    const changePaths = async () => {
      const response = await fetch(`${stack.url}/acme/JsonAPI/openapi.json`, {
        headers: { authorization: DEMO_AUTH },
      });
      const document = (await response.json()) as Description;
      return Object.keys(document.paths)
        .filter((path) => path.includes('/getChanges/'))
        .sort();
    };
    expect(await changePaths()).toEqual([
      '/acme/JsonAPI/Data/getChanges/DOKUMENT',
      '/acme/JsonAPI/Data/getChanges/SUBJECT',
    ]);
    // UCET listed, but never recorded in the database: getChanges on it answers 400 only, so it is not described.
    await edit((registry) => {
      (registry.tenants.acme as unknown as { changeFeed: string[] }).changeFeed = [
        'SUBJECT',
        'DOKUMENT',
        'UCET',
      ];
    });
    const ucet = () =>
      fetch(`${stack.url}/acme/JsonAPI/Data/getChanges/UCET`, { headers: { authorization: DEMO_AUTH } });
    await within(MAX_AGE_SECONDS * 1000 + 1000, async () => (await ucet()).status, 400);
    expect(((await (await ucet()).json()) as { error: { code: string } }).error.code).toBe(
      'changes_not_recorded',
    );
    expect(await changePaths()).toEqual([
      '/acme/JsonAPI/Data/getChanges/DOKUMENT',
      '/acme/JsonAPI/Data/getChanges/SUBJECT',
    ]);
  });

  it('lets a user added to a tenant in within the max age', async () => {
    const hash = await hashPassword('second-password');
    await edit((registry) => {
      registry.tenants.demo!.dataApiUsers.push({ name: 'second', passwordHash: hash });
    });
    await within(
      MAX_AGE_SECONDS * 1000 + 1000,
      () => rowsCount('demo', basic('second', 'second-password')),
      200,
    );
  });

  it('stops a rotated password with the next read, though the process had it remembered', async () => {
    expect(await rowsCount('demo', DEMO_AUTH)).toBe(200);
    const hash = await hashPassword('rotated-password');
    await edit((registry) => {
      registry.tenants.demo!.dataApiUsers[0]!.passwordHash = hash;
    });
    await within(MAX_AGE_SECONDS * 1000 + 1000, () => rowsCount('demo', DEMO_AUTH), 401);
    expect(await rowsCount('demo', basic('demo', 'rotated-password'))).toBe(200);
  });

  it('stops a removed user with the next read', async () => {
    expect(await rowsCount('demo', basic('second', 'second-password'))).toBe(200);
    await edit((registry) => {
      registry.tenants.demo!.dataApiUsers = registry.tenants.demo!.dataApiUsers.filter(
        (u) => u.name !== 'second',
      );
    });
    await within(
      MAX_AGE_SECONDS * 1000 + 1000,
      () => rowsCount('demo', basic('second', 'second-password')),
      401,
    );
  });

  it('refuses, at its very first request, a user removed while the instance sat idle for twice the max age', async () => {
    const hash = await hashPassword('idle-password');
    await edit((registry) => {
      registry.tenants.demo!.dataApiUsers.push({ name: 'idle', passwordHash: hash });
    });
    await within(MAX_AGE_SECONDS * 1000 + 1000, () => rowsCount('demo', basic('idle', 'idle-password')), 200);
    await edit((registry) => {
      registry.tenants.demo!.dataApiUsers = registry.tenants.demo!.dataApiUsers.filter(
        (u) => u.name !== 'idle',
      );
    });
    // No request meanwhile: the copy in memory is older than twice the max age when the next comes.
    await sleep(2 * MAX_AGE_SECONDS * 1000 + 300);
    expect(await rowsCount('demo', basic('idle', 'idle-password'))).toBe(401);
  });

  it("stops an OAuth client's tokens with the next read once its secret hash, or the client, is removed (an emergency stop)", async () => {
    type Client = { clientId: string; secretHashes: string[]; scopes: string[] };
    const clientsOf = (registry: Registry) =>
      (registry.tenants.demo as unknown as { oauthClients: Client[] }).oauthClients;
    const grant = (secret: string) =>
      fetch(`${stack.url}/demo/oauth2/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: basic('demo-client', secret),
        },
        body: 'grant_type=client_credentials&scope=data.read',
      });
    const tokenWith = async (secret: string) => {
      const response = await grant(secret);
      expect(response.status, await response.clone().text()).toBe(200);
      return `Bearer ${((await response.json()) as { access_token: string }).access_token}`;
    };
    const before = await tokenWith('demo-client-secret');
    expect(await rowsCount('demo', before)).toBe(200);
    // A rotation begins: the new secret's hash beside the old one; tokens of either secret work.
    const newHash = await hashPassword('demo-client-secret-2');
    await edit((registry) => {
      clientsOf(registry)
        .find((c) => c.clientId === 'demo-client')!
        .secretHashes.push(newHash);
    });
    await within(
      MAX_AGE_SECONDS * 1000 + 1000,
      async () => (await grant('demo-client-secret-2')).status,
      200,
    );
    const after = await tokenWith('demo-client-secret-2');
    expect(await rowsCount('demo', before)).toBe(200);
    expect(await rowsCount('demo', after)).toBe(200);
    // The old hash removed: its token stops with the next read, though this process had verified
    // it and it has minutes to live; the new secret's token goes on.
    await edit((registry) => {
      clientsOf(registry).find((c) => c.clientId === 'demo-client')!.secretHashes = [newHash];
    });
    await within(MAX_AGE_SECONDS * 1000 + 1000, () => rowsCount('demo', before), 401);
    expect(await rowsCount('demo', after)).toBe(200);
    const refused = await fetch(`${stack.url}/demo/JsonAPI/Data/getRowsCount/SUBJECT`, {
      headers: { authorization: before },
    });
    expect(refused.headers.get('www-authenticate')).toBe(
      'Bearer realm="demo", error="invalid_token", error_description="The access token is not valid for this tenant"',
    );
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('invalid_token');
    // The client removed: every token of it stops with the next read.
    await edit((registry) => {
      clientsOf(registry).splice(
        clientsOf(registry).findIndex((c) => c.clientId === 'demo-client'),
        1,
      );
    });
    await within(MAX_AGE_SECONDS * 1000 + 1000, () => rowsCount('demo', after), 401);
  });

  it('keeps the registry in force when an edit does not validate, and logs the setting’s path', async () => {
    await edit((registry) => {
      registry.tenants.demo!.dataApiUsers[0]!.passwordHash = 'plain-text';
    });
    await sleep(MAX_AGE_SECONDS * 1000 + 200);
    expect(await rowsCount('demo', basic('demo', 'rotated-password'))).toBe(200);
    expect(await rowsCount('acme', DEMO_AUTH)).toBe(200);
    expect(JSON.stringify(refusedReads)).toContain('tenants.demo.dataApiUsers.0.passwordHash');
    expect(JSON.stringify(refusedReads)).not.toContain('plain-text');
  });
});
