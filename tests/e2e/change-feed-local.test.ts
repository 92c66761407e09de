import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalStack } from '../../infra/local/stack.js';
import { DEMO_AUTH } from '../support/demo.js';

/**
 * The change feed of another table on the local stack's embedded database (docs/configuration.md,
 * "Change feed"): the stack builds that database itself, so listing the table in the tenant's
 * `changeFeed` of tenants.json is what `npm run db:apply -- --change-feed` is on SQL Server.
 */
let dir: string;
const registryWith = async (changeFeed: string[]) => {
  const registry = JSON.parse(await readFile('infra/local/tenants.json', 'utf8'));
  registry.tenants.demo.changeFeed = changeFeed;
  const file = join(dir, `tenants-${changeFeed.join('-')}.json`);
  await writeFile(file, JSON.stringify(registry));
  return file;
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'change-feed-local-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.skipIf(process.env.LOCAL_DATABASE === 'tsql')(
  'the change feed of a table listed in changeFeed, on the embedded database',
  () => {
    it('is recorded from the start: getChanges on it answers and the description lists it', async () => {
      const stack = await startLocalStack({
        port: 0,
        database: 'embedded',
        env: { TENANT_REGISTRY_FILE: await registryWith(['SUBJECT', 'DOKUMENT', 'UCET']) },
      });
      try {
        const first = await fetch(`${stack.url}/demo/JsonAPI/Data/getChanges/UCET?rows=5`, {
          headers: { authorization: DEMO_AUTH },
        });
        expect(first.status).toBe(200);
        expect(first.headers.get('link')).toMatch(/rel="next"$/);
        const description = (await (
          await fetch(`${stack.url}/demo/JsonAPI/openapi.json`, { headers: { authorization: DEMO_AUTH } })
        ).json()) as { paths: Record<string, unknown> };
        expect(Object.keys(description.paths)).toContain('/demo/JsonAPI/Data/getChanges/UCET');
      } finally {
        await stack.stop();
        delete process.env.TENANT_REGISTRY_FILE;
      }
    });

    it('a table the database does not have refuses the registry at start, naming the setting', async () => {
      await expect(
        startLocalStack({
          port: 0,
          database: 'embedded',
          env: { TENANT_REGISTRY_FILE: await registryWith(['SUBJECT', 'NO_SUCH_TABLE']) },
        }),
      ).rejects.toThrow(
        'Invalid tenant registry: tenants.demo.changeFeed.1: the embedded database "demo" cannot record NO_SUCH_TABLE (no such table)',
      );
      delete process.env.TENANT_REGISTRY_FILE;
    });
  },
);
