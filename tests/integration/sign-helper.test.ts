import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signatureHeader } from '../../shared/core/web-api/signature.js';

/**
 * `npm run sign` as docs/web-api-signing.md tells a user to run it: from a directory outside the
 * clone (npm --prefix), with paths relative to that directory, and every mistake said on stderr with
 * a non-zero exit, since it runs inside `$(…)` where an empty answer would go unnoticed.
 */
const CLONE = resolve('.');
let outside: string;

beforeAll(async () => {
  outside = await mkdtemp(join(tmpdir(), 'sign-helper-'));
  await mkdir(join(outside, 'calls'));
  await writeFile(join(outside, 'calls', 'body.json'), '{\n  "vltyp": 1001\n}\n');
});
afterAll(async () => {
  await rm(outside, { recursive: true, force: true });
});

function sign(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    const { WEB_API_HASH: _unset, ...rest } = process.env;
    execFile(
      'npm',
      ['--prefix', CLONE, 'run', '-s', 'sign', '--', ...args],
      { cwd: outside, env: { ...rest, ...env } },
      (error, stdout, stderr) => done({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('npm run sign (infra/tools/sign.ts)', () => {
  it('signs a file given relative to the caller’s directory, outside the clone', async () => {
    const { code, stdout, stderr } = await sign(['calls/body.json', '--time', '1700000000'], {
      WEB_API_HASH: 'demo-api-hash',
    });
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    const bytes = Buffer.from('{\n  "vltyp": 1001\n}\n');
    expect(stdout).toBe(`${signatureHeader('demo-api-hash', bytes, '1700000000')}\n`);
  });

  it('takes the hash from --hash as well', async () => {
    const { code, stdout } = await sign(['calls/body.json', '--hash', 'other-api-hash', '--time', '17']);
    expect(code).toBe(0);
    expect(stdout.trim()).toBe(
      signatureHeader('other-api-hash', Buffer.from('{\n  "vltyp": 1001\n}\n'), '17'),
    );
  });

  it('fails loudly: a missing file, no hash, a bad time stamp or stray arguments exit non-zero with a message on stderr', async () => {
    const cases: [string[], Record<string, string>, string][] = [
      [
        ['body.json'],
        { WEB_API_HASH: 'h' },
        `sign: cannot read the body file ${join(outside, 'body.json')}: no such file`,
      ],
      [['calls/body.json'], {}, 'sign: no API hash: set WEB_API_HASH or give --hash'],
      [
        ['calls/body.json', '--time', '1700000000000000'],
        { WEB_API_HASH: 'h' },
        'sign: --time must be Unix seconds',
      ],
      [['calls/body.json', 'more.json'], { WEB_API_HASH: 'h' }, 'sign: unexpected arguments: more.json'],
      [[], { WEB_API_HASH: 'h' }, 'sign: no body file given'],
      [['calls/body.json', '--hash'], {}, 'sign: --hash needs a value'],
    ];
    for (const [args, env, message] of cases) {
      const { code, stdout, stderr } = await sign(args, env);
      expect(code, args.join(' ')).not.toBe(0);
      expect(stdout, args.join(' ')).toBe('');
      expect(stderr, args.join(' ')).toContain(message);
      expect(stderr, args.join(' ')).toContain('npm --prefix <clone> run -s sign');
      expect(stderr, args.join(' ')).not.toMatch(/\n\s+at /);
    }
  });
});
