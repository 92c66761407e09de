import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The README and the docs/ pages link into each other (a section moved to another page keeps its
 * anchor): every relative link must reach a file, and every #anchor a heading of that page.
 */
const pages = [
  'README.md',
  ...readdirSync('docs')
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes. */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-');

function anchorsOf(page: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of readFileSync(page, 'utf8').split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const heading = /^#{1,6} (.*)$/.exec(line);
    if (heading && !fenced) anchors.add(anchorOf(heading[1]!));
  }
  return anchors;
}

describe('documentation links', () => {
  it('reach a file and a heading, from every page', () => {
    const broken: string[] = [];
    for (const page of pages) {
      for (const [, link] of readFileSync(page, 'utf8').matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(link!)) continue;
        const [path, anchor] = link!.split('#', 2) as [string, string | undefined];
        const target = path ? normalize(join(dirname(page), path)) : page;
        if (!existsSync(target)) broken.push(`${page}: ${link} (no such file)`);
        else if (anchor && target.endsWith('.md') && !anchorsOf(target).has(anchor))
          broken.push(`${page}: ${link} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('keeps the README short, with a page for each part of the outline', () => {
    const readme = readFileSync('README.md', 'utf8');
    expect(readme.split('\n').length).toBeLessThanOrEqual(300);
    expect(readme).toContain('```mermaid');
    for (const page of [
      'api',
      'web-api-signing',
      'webhooks',
      'configuration',
      'operations',
      'sql-server',
      'development',
      'troubleshooting',
      'errors',
    ])
      expect(readme, page).toContain(`](docs/${page}.md)`);
  });
});

describe('the API reference', () => {
  it('speaks to a user: no test files, internal issue numbers or engine internals in docs/api.md', () => {
    // How each behaviour is verified lives in docs/development.md, not in the reference.
    const internal = /tests\/|\.test\.ts|\bvitest\b|\bissue \d+|\bBabelfish\b|\bPostgreSQL's\b/i;
    const found = readFileSync('docs/api.md', 'utf8')
      .split('\n')
      .map((line, index) => ({ line, number: index + 1 }))
      .filter(({ line }) => internal.test(line))
      .map(({ line, number }) => `docs/api.md:${number}: ${line.trim()}`);
    expect(found).toEqual([]);
  });
});
