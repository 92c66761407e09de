import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = join(
  dirname(createRequire(import.meta.url).resolve('@redocly/cli/package.json')),
  'bin',
  'cli.js',
);

/**
 * Every problem `redocly lint` finds in `file` under its recommended rules (errors and warnings
 * alike), as `<severity> <rule> <pointer>: <message>`. The CLI itself, as an integrator runs it, in
 * this process's Node; redocly.yaml (the rules, telemetry off) and the environment keep it off the
 * network.
 */
export async function redoclyProblems(file: string): Promise<string[]> {
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(
      process.execPath,
      [CLI, 'lint', file, '--config', join(ROOT, 'redocly.yaml'), '--format', 'json'],
      {
        cwd: ROOT,
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
        maxBuffer: 16 * 1024 * 1024,
      },
      // It exits 1 when it found an error: the report is on stdout all the same.
      (error, out, err) => (out.trim() ? resolve(out) : reject(error ?? new Error(`no report: ${err}`))),
    );
  });
  const report = JSON.parse(stdout) as {
    problems: {
      ruleId: string;
      severity: string;
      message: string;
      location: { pointer?: string }[];
    }[];
  };
  return report.problems.map(
    (problem) =>
      `${problem.severity} ${problem.ruleId} ${problem.location[0]?.pointer ?? ''}: ${problem.message}`,
  );
}

/** {@link redoclyProblems} of a document held in memory (a per-tenant description). */
export async function redoclyProblemsOf(document: unknown): Promise<string[]> {
  const dir = await mkdtemp(join(tmpdir(), 'redocly-lint-'));
  try {
    const file = join(dir, 'description.json');
    await writeFile(file, JSON.stringify(document));
    return await redoclyProblems(file);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
