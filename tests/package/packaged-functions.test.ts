import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { importPackagedModule, localFunctions } from '../../infra/local/packaged-functions.js';
import { importHandler } from '../../infra/local/routes.js';
import { packageService, withPackagingLock } from '../support/packaged-service.js';

/**
 * LOCAL_FUNCTIONS=packaged (CONTRACT.md section 3): the local stack loads each handler from its zip,
 * as Lambda runs it. The e2e suite of `npm run test:tsql` runs that way; these are the mode's own
 * checks: the handler really is the bundle's, and a missing package or a wrong setting says so.
 */

beforeAll(async () => {
  await withPackagingLock(() => packageService());
}, 600_000);

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('LOCAL_FUNCTIONS', () => {
  it('is source by default and refuses anything but source or packaged', () => {
    vi.stubEnv('LOCAL_FUNCTIONS', '');
    expect(localFunctions()).toBe('source');
    vi.stubEnv('LOCAL_FUNCTIONS', 'zip');
    expect(() => localFunctions()).toThrow('LOCAL_FUNCTIONS must be "source" or "packaged"; got "zip"');
  });

  it("packaged: unpacks outside the repository, removing what ended processes' runs left there", async () => {
    // A process that has ended (its pid is free) and this one, which is alive.
    const ended = spawnSync(process.execPath, ['-e', '']).pid;
    const left = join(tmpdir(), `svc-packaged-${ended}-leftover`);
    const live = join(tmpdir(), `svc-packaged-${process.pid}-alive`);
    mkdirSync(join(left, 'webTest'), { recursive: true });
    mkdirSync(live, { recursive: true });
    try {
      vi.stubEnv('LOCAL_FUNCTIONS', 'packaged');
      await importPackagedModule('webTest', 'functions/web-api/test.handler');
      expect(existsSync(left)).toBe(false);
      expect(existsSync(live)).toBe(true);
      const mine = readdirSync(tmpdir()).filter((entry) => entry.startsWith(`svc-packaged-${process.pid}-`));
      // This process's own unpacking beside the live one (other test files' runs may add theirs).
      expect(mine.length).toBeGreaterThanOrEqual(2);
    } finally {
      rmSync(left, { recursive: true, force: true });
      rmSync(live, { recursive: true, force: true });
    }
  });

  it('packaged: serves the handler of the zip, not of the sources', async () => {
    vi.stubEnv('LOCAL_FUNCTIONS', 'source');
    const fromSource = await importHandler<() => unknown>('functions/web-api/test.handler');
    vi.stubEnv('LOCAL_FUNCTIONS', 'packaged');
    const fromZip = await importHandler<() => unknown>('functions/web-api/test.handler');
    expect(typeof fromZip).toBe('function');
    expect(fromZip).not.toBe(fromSource);
    const bundle = await importPackagedModule('webTest', 'functions/web-api/test.handler');
    expect(bundle.handler).toBe(fromZip);
  });

  it('packaged: a function without a zip is an error that says to package first', () => {
    expect(() => importPackagedModule('noSuchFunction', 'functions/none.handler')).toThrow(
      /noSuchFunction\.zip is missing; run `npm run package` first/,
    );
  });
});
