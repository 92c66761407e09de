/**
 * The examples of README.md and docs/*.md, read as tests/e2e/docs-examples.test.ts runs them (the
 * convention is in docs/development.md, "Documentation examples"):
 *
 * - every ```sh block is an example, run in the order of its page, all of a page's blocks in one
 *   shell (so that a variable set in one block is there in the next);
 * - `# ` lines of a sh block are the answer the commands before them print, joined; a line that
 *   goes on with spaces after `#` continues the one above; `…` stands for anything (also nothing);
 * - `<!-- example: skip (reason) -->` on the line before a block leaves it out, visibly, with the
 *   reason; `<!-- example: run -->` before a ```js or ```python block runs it too, its answer being
 *   the comment lines (`// `, `# `) that end it; a skipped block of any language is listed too;
 * - `<!-- examples: stack NAME=value … -->` anywhere in a page starts that page's local stack with
 *   those settings.
 */

export interface DocExample {
  readonly page: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly language: 'sh' | 'js' | 'python' | string;
  /** The code without its answer lines. */
  readonly code: string;
  /** The answer lines without their comment marker; empty when the page shows none. */
  readonly answer: readonly string[];
  /** Why the example is not run, when it is not. */
  readonly skip?: string;
}

const FENCE = /^(\s*)```(\w*)\s*$/;
const SKIP = /^<!-- example: skip (.+) -->$/;
const RUN = /^<!-- example: run -->$/;
const STACK = /<!-- examples: stack ((?:\w+=\S+ ?)+) -->/;

/** The examples of one page, runnable or skipped. Other fenced blocks (json, text, …) are not examples. */
export function examplesOf(page: string, text: string): DocExample[] {
  const lines = text.split('\n');
  const examples: DocExample[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const [, indent = '', language = ''] = open;
    let end = i + 1;
    while (end < lines.length && !/^\s*```\s*$/.test(lines[end]!)) end++;
    const body = lines.slice(i + 1, end).map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l));
    const before = (lines[i - 1] ?? '').trim();
    const opted = RUN.test(before);
    const skip = SKIP.exec(before)?.[1];
    if (language === 'sh' || skip || (opted && (language === 'js' || language === 'python'))) {
      examples.push({
        page,
        line: i + 1,
        language,
        ...splitAnswer(language, body),
        ...(skip ? { skip } : {}),
      });
    }
    i = end;
  }
  return examples;
}

function splitAnswer(language: string, body: string[]): { code: string; answer: string[] } {
  if (language === 'sh') {
    return {
      code: body.filter((l) => !l.startsWith('#')).join('\n'),
      answer: body.filter((l) => l.startsWith('# ') || l.startsWith('#  ')).map((l) => l.slice(2)),
    };
  }
  const marker = language === 'python' ? '# ' : '// ';
  let start = body.length;
  while (start > 0 && body[start - 1]!.startsWith(marker)) start--;
  return {
    code: body.slice(0, start).join('\n'),
    answer: body.slice(start).map((l) => l.slice(marker.length)),
  };
}

/** The stack settings a page asks for (`<!-- examples: stack A=1 B=2 -->`). */
export function stackSettingsOf(text: string): Record<string, string> {
  const settings = STACK.exec(text)?.[1];
  if (!settings) return {};
  return Object.fromEntries(
    settings
      .trim()
      .split(/\s+/)
      .map((pair) => pair.split('=', 2) as [string, string]),
  );
}

/** Output or answer as compared: each line without its leading blanks, lines joined. */
function flatten(lines: readonly string[]): string {
  return lines.map((line) => line.trimStart()).join('');
}

/** Whether what the commands printed is the answer the page shows, `…` standing for anything. */
export function matchesAnswer(answer: readonly string[], printed: string): boolean {
  const pattern = flatten(answer)
    .split('…')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[\\s\\S]*?');
  return new RegExp(`^${pattern}$`).test(flatten(printed.replace(/\r/g, '').split('\n')));
}
