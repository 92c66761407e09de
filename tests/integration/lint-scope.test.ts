import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * Following the docs writes scratch files into the clone (body.json, answer.json, a saved download):
 * `npm test`'s lint must not fail on them. Biome runs with the project's biome.json on a copy that
 * holds such files beside a project file with the same fault.
 */
let copy: string;
const BADLY_FORMATTED = '{"vltyp":1001,   "params":[{"ico":"25596641"}]}';

beforeAll(async () => {
  copy = await mkdtemp(join(tmpdir(), 'lint-scope-'));
  await copyFile('biome.json', join(copy, 'biome.json'));
  for (const scratch of ['body.json', 'answer.json', 'all.json', 'verify.mjs', 'notes/try.ts'])
    await mkdir(join(copy, scratch, '..'), { recursive: true }).then(() =>
      writeFile(join(copy, scratch), scratch.endsWith('.json') ? BADLY_FORMATTED : 'let   x = 1\n'),
    );
  await mkdir(join(copy, 'shared'));
  await writeFile(join(copy, 'shared', 'config.json'), BADLY_FORMATTED);
});
afterAll(async () => {
  await rm(copy, { recursive: true, force: true });
});

describe('lint scope (biome.json)', () => {
  it('checks the project folders and passes over scratch files the docs make in the clone', async () => {
    const biome = resolve('node_modules/@biomejs/biome/bin/biome');
    const result = await new Promise<{ code: number; output: string }>((done) =>
      execFile(
        process.execPath,
        [biome, 'check', '--max-diagnostics=50', '.'],
        { cwd: copy },
        (error, stdout, stderr) =>
          done({ code: error ? Number(error.code ?? 1) : 0, output: stdout + stderr }),
      ),
    );
    // The project file is checked (and fails), so the check did run with this configuration…
    expect(result.code).not.toBe(0);
    expect(result.output).toContain('shared/config.json');
    // …and none of the scratch files was looked at.
    for (const scratch of ['body.json', 'answer.json', 'all.json', 'verify.mjs', 'try.ts'])
      expect(result.output).not.toContain(scratch);
  });
});
