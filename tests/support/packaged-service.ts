import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { readZip } from '../../infra/local/packaged-functions.js';
import { readServerlessConfig } from '../../infra/local/serverless-config.js';

export { readZip };

/** One function's zip as `npm run package` leaves it in `.serverless/`. */
export interface PackagedFunction {
  readonly name: string;
  readonly zipPath: string;
  readonly zipBytes: number;
  /** The handler's module inside the zip, e.g. `functions/web-api/test.mjs`. */
  readonly entry: string;
  /** Every file of the zip by its path. */
  readonly files: ReadonlyMap<string, Buffer>;
}

const LOCK_STALE_MS = 10 * 60_000;

/**
 * Runs `fn` while no other test process packages this service. Every packaging builds in the same
 * `.esbuild/` folder of the service, whatever its `--package` target, so two at once (the bundle
 * budgets and the alarms template, in parallel test files) remove each other's output. The lock is
 * a directory, created atomically; one left by a killed process is taken over after 10 minutes.
 */
export async function withPackagingLock<T>(fn: () => Promise<T> | T, serviceDir = process.cwd()): Promise<T> {
  const lock = join(serviceDir, '.data', 'packaging.lock');
  mkdirSync(dirname(lock), { recursive: true });
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const age = Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > LOCK_STALE_MS) rmSync(lock, { recursive: true, force: true });
      else await sleep(250);
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * Runs `npm run package` in `serviceDir` (offline, no AWS credentials), with deploy parameters
 * (`--param`) when given; throws with its output on failure. The packaging gets a temporary
 * directory of its own (TMPDIR); returns what it left there.
 */
export function packageService(serviceDir = process.cwd(), params: Record<string, string> = {}): string[] {
  const args = Object.entries(params).map(([name, value]) => `--param=${name}=${value}`);
  const temporary = mkdtempSync(join(tmpdir(), 'package-service-'));
  try {
    const result = spawnSync('npm', ['run', 'package', ...(args.length > 0 ? ['--', ...args] : [])], {
      cwd: serviceDir,
      encoding: 'utf8',
      timeout: 300_000,
      env: { ...process.env, TMPDIR: temporary, TMP: temporary, TEMP: temporary },
    });
    if (result.status !== 0) {
      throw new Error(
        `npm run package failed (${result.status ?? result.signal}):\n${result.stdout}\n${result.stderr}`,
      );
    }
    return readdirSync(temporary);
  } finally {
    rmSync(temporary, { recursive: true, force: true });
  }
}

/** Every function of serverless.yml with its packaged zip (run `packageService` first). */
export function packagedFunctions(serviceDir = process.cwd()): PackagedFunction[] {
  const config = readServerlessConfig(join(serviceDir, 'serverless.yml'));
  return Object.entries(config.functions).map(([name, fn]) => {
    const zipPath = join(serviceDir, '.serverless', `${name}.zip`);
    const zip = readFileSync(zipPath);
    const entry = `${fn.handler.slice(0, fn.handler.lastIndexOf('.'))}.mjs`;
    const files = readZip(zip);
    if (!files.has(entry)) throw new Error(`${name}: ${entry} is not in ${zipPath}`);
    return { name, zipPath, zipBytes: zip.length, entry, files };
  });
}

/** Writes a function's files under `dir`; returns the path of its handler module. */
export function extractFunction(fn: PackagedFunction, dir: string): string {
  for (const [path, data] of fn.files) {
    const target = join(dir, path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, data);
  }
  return join(dir, fn.entry);
}

/** JavaScript files of a function's zip (source maps and the like left out). */
export function codeFiles(fn: PackagedFunction): [string, Buffer][] {
  return [...fn.files].filter(([path]) => /\.(mjs|cjs|js)$/.test(path));
}
