import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startLocalStack } from '../../infra/local/stack.js';
import { type DocExample, examplesOf, matchesAnswer, stackSettingsOf } from '../support/docs-examples.js';

/**
 * Every example of README.md and docs/*.md, run as a user pastes it (the convention:
 * tests/support/docs-examples.ts and docs/development.md): a page's shell examples in one bash, in
 * order, against a fresh local stack, from a directory that looks like the clone (package.json,
 * node_modules, infra, shared, examples linked) so that `npm run -s sign` and `examples/invoice.xml`
 * work and the files the examples write stay out of the repository. What each example prints must
 * be the answer its page shows. An example that cannot run here is listed as skipped, with why.
 */
const CLONE = resolve('.');
const LOCAL_URL = 'http://127.0.0.1:3000';
const END = '@@example-end@@';
const FAILED = '@@example-failed@@';

const pages = [
  'README.md',
  ...(await readdir('docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`),
];
const texts = new Map(
  await Promise.all(pages.map(async (page) => [page, await readFile(page, 'utf8')] as const)),
);

const CLONE_ENTRIES = ['package.json', 'node_modules', 'infra', 'shared', 'examples', 'tsconfig.json'];
/** Per page, the files its examples wrote that git would show as untracked. */
const leftovers = new Map<string, string[]>();

/** A directory a user's clone looks like to the examples. */
async function workingDirectory(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'docs-examples-'));
  for (const entry of CLONE_ENTRIES) await symlink(join(CLONE, entry), join(dir, entry));
  return dir;
}

function run(
  command: string,
  args: string[],
  cwd: string,
  input?: string,
): Promise<{ out: string; err: string; code: number }> {
  return new Promise((done, fail) => {
    // WEB_API_HASH and the like are not the user's: the examples set what they need.
    const { WEB_API_HASH: _hash, ...env } = process.env;
    const child = spawn(command, args, { cwd, env });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
    });
    child.stderr.on('data', (chunk) => {
      err += chunk;
    });
    child.on('error', fail);
    child.on('close', (code) => done({ out, err, code: code ?? 1 }));
    // A command that exits before reading its input closes the pipe: not the test's failure.
    child.stdin.on('error', () => undefined);
    child.stdin.end(input ?? '');
  });
}

/** One bash for the page's shell examples: each block followed by a marker, any failed command noted. */
function pageScript(examples: DocExample[], url: string): string {
  // `$BASE`, the one base URL of the examples, as a reader sets it (README "Quick start").
  const lines = [`trap 'echo "${FAILED} $BASH_COMMAND"' ERR`, `BASE='${url}'`];
  for (const example of examples) {
    lines.push(example.code.replaceAll(LOCAL_URL, url), `printf '\\n${END}\\n'`);
  }
  return lines.join('\n');
}

async function runPage(page: string, examples: DocExample[]): Promise<Map<DocExample, string>> {
  const saved = { ...process.env };
  const stack = await startLocalStack({ port: 0, env: stackSettingsOf(texts.get(page)!) });
  const dir = await workingDirectory();
  try {
    const printed = new Map<DocExample, string>();
    const shell = examples.filter((e) => e.language === 'sh');
    const { out, err } = await run('bash', [], dir, pageScript(shell, stack.url));
    const parts = out.split(`\n${END}\n`);
    for (const [index, example] of shell.entries())
      printed.set(example, parts[index] ?? `(nothing; stderr: ${err.slice(-2000)})`);
    for (const example of examples.filter((e) => e.language !== 'sh')) {
      const file = join(dir, example.language === 'js' ? 'example.mjs' : 'example.py');
      await writeFile(file, example.code.replaceAll(LOCAL_URL, stack.url));
      const result = await run(example.language === 'js' ? process.execPath : 'python3', [file], dir);
      printed.set(example, result.code === 0 ? result.out : `${FAILED} exit ${result.code}: ${result.err}`);
    }
    // What the examples wrote in the clone: git must ignore it, or `git status` shows it after the tour.
    const written = (await readdir(dir)).filter(
      (name) => !CLONE_ENTRIES.includes(name) && name !== 'example.mjs' && name !== 'example.py',
    );
    const ignored = written.length
      ? (await run('git', ['check-ignore', '--no-index', ...written], CLONE)).out.split('\n')
      : [];
    leftovers.set(
      page,
      written.filter((name) => !ignored.includes(name)),
    );
    return printed;
  } finally {
    await stack.stop();
    await rm(dir, { recursive: true, force: true });
    for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
    Object.assign(process.env, saved);
  }
}

for (const page of pages) {
  const examples = examplesOf(page, texts.get(page)!);
  if (examples.length === 0) continue;
  describe(`examples of ${page}`, () => {
    // `npm start` or `npm test` inside the page's shell would start a second stack or this suite again.
    const startsAStack = (e: DocExample) => /\bnpm (start|test)\b/.test(e.code);
    const runnable = examples.filter((e) => !e.skip && !startsAStack(e));
    let printed: Promise<Map<DocExample, string>> | undefined;
    const outputs = () => {
      printed ??= runPage(page, runnable);
      return printed;
    };
    if (examples.some((e) => !e.skip && !startsAStack(e))) {
      it('leaves only files git ignores in the clone (git status stays clean after the tour)', async () => {
        await outputs();
        expect(leftovers.get(page)).toEqual([]);
      }, 240_000);
    }
    for (const example of examples) {
      const name = `${page}:${example.line} ${example.code.split('\n')[0]!.slice(0, 70)}`;
      if (example.skip) {
        it.skip(`${name} — not run here: ${example.skip}`, () => undefined);
        continue;
      }
      if (startsAStack(example)) {
        it(name, () => {
          throw new Error(
            'it runs npm start or npm test: mark it <!-- example: skip (why) --> on the line before',
          );
        });
        continue;
      }
      it(name, async () => {
        const output = (await outputs()).get(example)!;
        expect(output, 'a command failed').not.toContain(FAILED);
        if (example.answer.length > 0) {
          expect(
            matchesAnswer(example.answer, output),
            `printed:\n${output.slice(0, 3000)}\npage shows:\n${example.answer.join('\n')}`,
          ).toBe(true);
        }
      }, 240_000);
    }
  });
}
