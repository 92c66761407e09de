import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { applicationEntry } from '../../infra/tools/web-api-application.js';
import { parseTenantRegistry } from '../../shared/config/tenants.js';
import { findRegisteredApplication } from '../../shared/core/web-api/applications.js';

/**
 * `npm run web-api -- application` and `-- hash` (docs/api.md "Adding an application or an
 * operation"): an application's entry for the tenant registry, which the registry takes as it is.
 */
describe('npm run web-api -- application: the registry entry of a new application', () => {
  const cli = (...args: string[]) => {
    const run = spawnSync('npx', ['tsx', 'infra/tools/web-api.ts', ...args], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    return { status: run.status, out: run.stdout.trim(), err: run.stderr.trim() };
  };
  const HASH = 'scrypt$16384$8$1$ZGVtby10ZW5hbnQtc2FsdA==$x2bp48ourmNi7AJz+st/kNLkTjPJ/XnX7NIpiDrZ8ig=';

  it('prints an entry with a key and an API hash made at random, which the registry takes and finds by its key', () => {
    const made = cli('application', '--id', '4', '--name', 'Partner s.r.o.');
    expect(made.status, made.err).toBe(0);
    const entry = JSON.parse(made.out) as { id: number; apiKey: string; apiHashes: string[] };
    expect(entry).toEqual({
      id: 4,
      name: 'Partner s.r.o.',
      apiKey: expect.stringMatching(/^key-[A-Za-z0-9_-]{16}$/),
      apiHashes: [expect.stringMatching(/^[A-Za-z0-9_-]{32}$/)],
      active: true,
    });
    const registry = parseTenantRegistry({
      tenants: {
        acme: {
          database: { kind: 'embedded', name: 'demo' },
          dataApiUsers: [{ name: 'integrator', passwordHash: HASH }],
          dataSources: '*',
          webApi: { applications: [entry] },
        },
      },
    });
    const applications = registry.get('acme')!.webApi.applications as Parameters<
      typeof findRegisteredApplication
    >[0];
    expect(findRegisteredApplication(applications, entry.apiKey)).toEqual({
      id: 4,
      apiHashes: entry.apiHashes,
      active: true,
    });
    // Another entry, another key and hash.
    const other = applicationEntry({ id: '5', name: 'Other' }) as typeof entry;
    expect([other.apiKey, other.apiHashes[0]]).not.toContain(entry.apiKey);
    expect(other.apiHashes[0]).not.toBe(entry.apiHashes[0]);
  });

  it('takes a key and hash given; refuses what the registry would, naming the option', () => {
    expect(
      applicationEntry({ id: '9', name: 'P', key: 'partner-key-9', hash: 'h'.repeat(20) }),
    ).toMatchObject({
      id: 9,
      apiKey: 'partner-key-9',
      apiHashes: ['h'.repeat(20)],
    });
    for (const [options, message] of [
      [{ name: 'P' }, '--id is required'],
      [{ id: 'x', name: 'P' }, '--id is required'],
      [{ id: '0', name: 'P' }, '--id: '],
      [{ id: '3000000000', name: 'P' }, '--id: '],
      [{ id: '1' }, '--name is required'],
      [{ id: '1', name: 'P', key: 'short' }, '--key must be 8 to 100 printable ASCII characters'],
      [{ id: '1', name: 'P', hash: 'short' }, '--hash must be 16 to 200 printable ASCII characters'],
    ] as const) {
      expect(() => applicationEntry(options), JSON.stringify(options)).toThrow(message);
    }
    const refused = cli('application', '--name', 'P');
    expect([refused.status, refused.err]).toEqual([1, expect.stringContaining('--id is required')]);
  });

  it('hash prints a new API hash for a rotation (added beside the old one)', () => {
    const first = cli('hash');
    const second = cli('hash');
    expect(first.out).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(second.out).not.toBe(first.out);
  });
});
