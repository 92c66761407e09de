import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * What `npm run <script>` names must be there: a script naming a file that never existed (as
 * `prepare-demo` once did) fails only when someone runs it, long after it was written.
 */
const scripts: Record<string, string> = JSON.parse(readFileSync('package.json', 'utf8')).scripts;

/** The repository's files a script's command names (a path under one of the project's folders). */
function filesNamed(command: string): string[] {
  return [...command.matchAll(/(?:^|[\s=])((?:infra|shared|functions|tests)\/[\w./-]+\.\w+)/g)].map(
    (match) => match[1]!,
  );
}

describe('package.json scripts', () => {
  it('name only files that exist', () => {
    const named = Object.entries(scripts).flatMap(([name, command]) =>
      filesNamed(command).map((file) => ({ name, file })),
    );
    expect(named.length).toBeGreaterThan(5);
    expect(named.filter(({ file }) => !existsSync(file))).toEqual([]);
  });

  it('run only test projects of vitest.config.ts', () => {
    const config = readFileSync('vitest.config.ts', 'utf8');
    const projects = new Set([...config.matchAll(/\bname: '([\w-]+)'/g)].map((match) => match[1]!));
    const named = Object.values(scripts).flatMap((command) =>
      [...command.matchAll(/--project ([\w-]+)/g)].map((match) => match[1]!),
    );
    expect(named.length).toBeGreaterThan(5);
    expect(named.filter((project) => !projects.has(project))).toEqual([]);
  });
});
