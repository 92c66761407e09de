import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// infra/bundle/eager-module-bodies.cjs: esbuild's CommonJS wrappers become parenthesised function
// expressions (compiled once by V8), the code does the same, and the source maps still point where
// they pointed.

const require = createRequire(import.meta.url);
const plugins = require('../../infra/bundle/esbuild-plugins.cjs') as esbuild.Plugin[];
const { decodeVlq } = require('../../infra/bundle/eager-module-bodies.cjs') as {
  decodeVlq: (text: string) => number[];
};

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'eager-module-bodies-'));
  writeFileSync(
    join(dir, 'lib.cjs'),
    [
      "'use strict';",
      "const label = (name) => name + ':';",
      "exports.first = function first() { return label('first') + 'FIRST_MARKER'; };",
      "exports.second = () => label('second') + 'SECOND_MARKER';",
      '',
    ].join('\n'),
  );
  writeFileSync(
    join(dir, 'once.cjs'),
    'module.exports = { count: (globalThis.loads = (globalThis.loads ?? 0) + 1) };\n',
  );
  writeFileSync(
    join(dir, 'entry.mjs'),
    [
      "import { first, second } from './lib.cjs';",
      "import once from './once.cjs';",
      "export const value = first() + second() + 'ENTRY_MARKER' + once.count;",
      '',
    ].join('\n'),
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function build(name: string, withEager: boolean): Promise<{ code: string; map: { mappings: string } }> {
  const outdir = join(dir, name);
  await esbuild.build({
    entryPoints: [join(dir, 'entry.mjs')],
    outdir,
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    sourcemap: 'linked',
    plugins: withEager ? plugins : plugins.filter((plugin) => plugin.name !== 'eager-module-bodies'),
    logLevel: 'silent',
  });
  return {
    code: readFileSync(join(outdir, 'entry.js'), 'utf8'),
    map: JSON.parse(readFileSync(join(outdir, 'entry.js.map'), 'utf8')),
  };
}

/** The original [source, line, column] the map gives for the generated position of `marker`. */
function originOf(built: { code: string; map: { mappings: string } }, marker: string) {
  const offset = built.code.indexOf(marker);
  const before = built.code.slice(0, offset);
  const line = before.split('\n').length - 1;
  const column = offset - (before.lastIndexOf('\n') + 1);
  let found: number[] | undefined;
  const state = [0, 0, 0, 0];
  built.map.mappings.split(';').forEach((text, index) => {
    let generated = 0;
    for (const segment of text ? text.split(',') : []) {
      const fields = decodeVlq(segment);
      generated += fields[0]!;
      if (fields.length >= 4) for (let i = 1; i < 4; i++) state[i]! += fields[i]!;
      if (index === line && generated <= column && fields.length >= 4)
        found = [state[1]!, state[2]!, state[3]!];
    }
  });
  return found;
}

describe('eager module bodies', () => {
  it('rewrites the CommonJS wrappers as parenthesised functions, and the code does the same', async () => {
    const lazy = await build('lazy', false);
    const eager = await build('eager', true);
    expect(lazy.code).toMatch(/=>\{"use strict"/);
    expect(eager.code).not.toMatch(/=>\{"use strict"/);
    expect(eager.code).toMatch(/\(function\([\w$,]*\)\s*\{"use strict"/);
    const value = (file: string) =>
      import(pathToFileURL(join(dir, file, 'entry.js')).href).then((m: { value: string }) => m.value);
    expect(await value('lazy')).toBe('first:FIRST_MARKERsecond:SECOND_MARKERENTRY_MARKER1');
    expect(await value('eager')).toBe('first:FIRST_MARKERsecond:SECOND_MARKERENTRY_MARKER2');
  });

  it('keeps the source maps pointing where they pointed', async () => {
    const lazy = await build('lazy-map', false);
    const eager = await build('eager-map', true);
    for (const marker of ['FIRST_MARKER', 'SECOND_MARKER', 'ENTRY_MARKER', 'loads']) {
      expect(eager.code, marker).toContain(marker);
      expect(originOf(eager, marker), marker).toEqual(originOf(lazy, marker));
      expect(originOf(eager, marker), marker).toBeDefined();
    }
  });
});
