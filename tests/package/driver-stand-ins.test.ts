import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as esbuild from 'esbuild';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The smaller stand-ins infra/bundle/esbuild-plugins.cjs bundles for parts of the SQL Server driver
// (docs/development.md "Cold starts"), held to what they replace: tedious's date parameters with js-joda-days.cjs
// and with js-joda, iconv-lite's code pages of SQL Server collations, `debug` when DEBUG is set.

const require = createRequire(import.meta.url);
const plugins = require('../../infra/bundle/esbuild-plugins.cjs') as esbuild.Plugin[];
const days = require('../../infra/bundle/js-joda-days.cjs') as typeof import('@js-joda/core');
const joda = require('@js-joda/core') as typeof import('@js-joda/core');

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'driver-stand-ins-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `source` bundled as the functions are (CommonJS out, so that a test can require it). */
async function bundled(name: string, source: string): Promise<string> {
  const entry = join(dir, `${name}-entry.cjs`);
  writeFileSync(entry, source);
  const outfile = join(dir, `${name}.cjs`);
  await esbuild.build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'cjs',
    mainFields: ['module', 'main'],
    nodePaths: [join(process.cwd(), 'node_modules')],
    plugins,
    logLevel: 'silent',
  });
  return outfile;
}

/** A day of years 1 to 9999 (what SQL Server's date types hold), as year, month and day. */
const someDate = fc
  .date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T00:00:00Z'), noInvalidDate: true })
  .map((date) => ({ year: date.getUTCFullYear(), month: date.getUTCMonth() + 1, day: date.getUTCDate() }));

describe('js-joda-days.cjs', () => {
  it('counts the days between two dates as js-joda does', () => {
    fc.assert(
      fc.property(someDate, someDate, (a, b) => {
        const mine = days.LocalDate.of(a.year, a.month, a.day).until(
          days.LocalDate.of(b.year, b.month, b.day),
          days.ChronoUnit.DAYS,
        );
        const theirs = joda.LocalDate.of(a.year, a.month, a.day).until(
          joda.LocalDate.of(b.year, b.month, b.day),
          joda.ChronoUnit.DAYS,
        );
        expect(mine).toBe(theirs);
      }),
      { numRuns: 5000 },
    );
    for (const [y, d] of [
      [1, 1],
      [1900, 1],
      [2000, 366],
      [2023, 365],
      [9999, 365],
    ] as const) {
      expect(days.LocalDate.ofYearDay(y, d).toString()).toBe(joda.LocalDate.ofYearDay(y, d).toString());
    }
  });

  it('refuses what js-joda refuses', () => {
    expect(() => days.LocalDate.of(2023, 2, 29)).toThrow();
    expect(() => days.LocalDate.of(2023, 13, 1)).toThrow();
    expect(() => days.LocalDate.ofYearDay(2023, 366)).toThrow();
    expect(() =>
      days.LocalDate.of(2024, 1, 1).until(days.LocalDate.of(2024, 1, 2), joda.ChronoUnit.MONTHS as never),
    ).toThrow(/Only ChronoUnit.DAYS/);
  });

  it("gives tedious's date parameters the same bytes as js-joda", async () => {
    const file = await bundled('tedious-types', "module.exports = require('tedious').TYPES;");
    // The stand-in, not js-joda (a class js-joda has and the stand-in has not).
    expect(readFileSync(file, 'utf8')).toContain('Only ChronoUnit.DAYS');
    expect(readFileSync(file, 'utf8')).not.toContain('DateTimeFormatterBuilder');
    const bundledTypes = require(file) as Record<
      string,
      { generateParameterData(parameter: unknown, options: unknown): Iterable<Buffer> }
    >;
    const realTypes = require('tedious').TYPES as typeof bundledTypes;
    const bytes = (types: typeof bundledTypes, type: string, value: Date, useUTC: boolean) =>
      Buffer.concat([...types[type]!.generateParameterData({ value, scale: 7 }, { useUTC })]).toString('hex');
    fc.assert(
      fc.property(
        fc.date({
          min: new Date('0001-01-01T00:00:00Z'),
          max: new Date('9999-12-31T23:59:59Z'),
          noInvalidDate: true,
        }),
        fc.boolean(),
        (value, useUTC) => {
          for (const type of ['Date', 'DateTime', 'DateTime2', 'DateTimeOffset']) {
            expect(bytes(bundledTypes, type, value, useUTC), type).toBe(
              bytes(realTypes, type, value, useUTC),
            );
          }
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('iconv-lite, bundled', () => {
  it("decodes and encodes every code page of tedious's collations as iconv-lite does", async () => {
    const bundledIconv = require(
      await bundled('iconv', "module.exports = require('iconv-lite');"),
    ) as typeof import('iconv-lite');
    const realIconv = require('iconv-lite') as typeof import('iconv-lite');
    const collation = require('tedious/lib/collation.js') as { codepageByLanguageId: Record<number, string> };
    const codePages = new Set(
      Object.values(collation.codepageByLanguageId).filter((name) => !/^CP9(32|36|49|50)$/.test(name)),
    );
    expect(codePages.size).toBeGreaterThanOrEqual(10);
    const everyByte = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    for (const codePage of [...codePages, 'CP437', 'CP850', 'utf-8']) {
      const text = realIconv.decode(everyByte, codePage);
      expect(bundledIconv.decode(everyByte, codePage), codePage).toBe(text);
      expect(bundledIconv.encode(text, codePage).equals(realIconv.encode(text, codePage)), codePage).toBe(
        true,
      );
    }
    // What no collation uses is left out.
    expect(() => bundledIconv.decode(everyByte, 'iso-8859-2')).toThrow(/not recognized/i);
    expect(() => bundledIconv.decode(everyByte, 'cp932')).toThrow(/Double-byte code pages/);
  });
});

describe('debug, bundled', () => {
  it('logs when DEBUG names the namespace, and is silent otherwise', async () => {
    const file = await bundled('debug', "require('debug')('mssql:base')('connecting %s', 'now');");
    const run = (env: Record<string, string>) =>
      spawnSync(process.execPath, [file], { env: { ...env, DEBUG_COLORS: 'no' }, encoding: 'utf8' }).stderr;
    expect(run({ DEBUG: 'mssql:*' })).toContain('mssql:base connecting now');
    expect(run({})).toBe('');
  });
});

describe("tedious's util, bundled", () => {
  it('is util itself, without loading the parts of util tedious does not use', async () => {
    const file = await bundled('tedious-debug', "module.exports = require('tedious/lib/debug.js');");
    const script = `
      const bundle = require(${JSON.stringify(file)});
      const Debug = bundle.default ?? bundle;
      const debug = new Debug({ token: true });
      const lines = [];
      debug.on('debug', (line) => lines.push(line));
      debug.token({ name: 'LOGINACK', value: { tds: '7.4' } });
      const loaded = process.moduleLoadList.filter((name) => /worker_threads|parse_args/.test(name));
      console.log(JSON.stringify({ lines, loaded }));
    `;
    const result = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    expect(result.stderr).toBe('');
    const { lines, loaded } = JSON.parse(result.stdout) as { lines: string[]; loaded: string[] };
    // util.inspect's own rendering of the token (in colours), through the stand-in.
    expect(lines.join('\n').replace(/\u001b\[\d+m/g, '')).toContain("name: 'LOGINACK'");
    expect(loaded).toEqual([]);
  });
});
