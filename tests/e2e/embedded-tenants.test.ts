import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { DEMO_AUTH } from '../support/demo.js';

/**
 * Any number of embedded tenants locally (CONTRACT.md section 2, issue 19): each tenant of kind
 * `embedded` gets a database of its own, named by `database.name` and built from the demo scripts.
 * On main a second one started and then answered every authenticated request with 500.
 */

let stack: LocalStack;
let dir: string;

beforeAll(async () => {
  const registry = JSON.parse(await readFile('infra/local/tenants.json', 'utf8'));
  const demo = registry.tenants.demo;
  registry.tenants.north = { ...demo, database: { kind: 'embedded', name: 'north' } };
  registry.tenants.south = {
    ...demo,
    database: { kind: 'embedded', name: 'south' },
    documentDatabase: { kind: 'embedded', name: 'south-documents' },
  };
  dir = await mkdtemp(join(tmpdir(), 'embedded-tenants-'));
  const file = join(dir, 'tenants.json');
  await writeFile(file, JSON.stringify(registry));
  stack = await startLocalStack({ port: 0, env: { TENANT_REGISTRY_FILE: file } });
});
afterAll(async () => {
  await stack?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const call = (path: string, init: RequestInit = {}) =>
  fetch(`${stack.url}${path}`, { ...init, headers: { authorization: DEMO_AUTH, ...init.headers } });

async function upload(tenant: string, name: string): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([`${tenant} only`], { type: 'text/plain' }), name);
  const response = await call(`/${tenant}/JsonAPI/File/setFile`, { method: 'POST', body: form });
  expect(response.status, tenant).toBe(200);
  return ((await response.json()) as { fileGUID: string }).fileGUID;
}

const rowsCount = async (tenant: string, source: string) => {
  const response = await call(`/${tenant}/JsonAPI/Data/getRowsCount/${source}`);
  expect(response.status, `${tenant} ${source}`).toBe(200);
  return ((await response.json()) as Record<string, [{ rowsCount: number }]>)[source]![0].rowsCount;
};

describe('Several embedded tenants on the local stack', () => {
  it('serves every embedded tenant from its own demo database', async () => {
    for (const tenant of ['demo', 'north', 'south']) {
      expect(await rowsCount(tenant, 'SUBJECT'), tenant).toBeGreaterThanOrEqual(50);
      const page = await call(`/${tenant}/JsonAPI/Data/getDataPaginate/DOKUMENT?fromRow=1&rows=2`);
      expect(page.status, tenant).toBe(200);
    }
  });

  it('keeps each tenant’s data to itself: a file stored for one is unknown to the others', async () => {
    const before = {
      demo: await rowsCount('demo', 'SVCDOC'),
      north: await rowsCount('north', 'SVCDOC'),
      south: await rowsCount('south', 'SVCDOC'),
    };
    const northFile = await upload('north', 'north.txt');
    const southFile = await upload('south', 'south.txt');
    expect(await rowsCount('north', 'SVCDOC')).toBe(before.north + 1);
    // South keeps its files in a document database of its own, not in its application database.
    expect(await rowsCount('south', 'SVCDOC')).toBe(before.south);
    expect(await rowsCount('demo', 'SVCDOC')).toBe(before.demo);
    const get = (tenant: string, guid: string) => call(`/${tenant}/JsonAPI/File/getFile/${guid}`);
    expect((await get('north', northFile)).status).toBe(200);
    expect(await (await get('south', southFile)).text()).toBe('south only');
    for (const [tenant, guid] of [
      ['demo', northFile],
      ['south', northFile],
      ['demo', southFile],
      ['north', southFile],
    ] as const) {
      expect([tenant, guid, (await get(tenant, guid)).status]).toEqual([tenant, guid, 404]);
    }
  });
});
