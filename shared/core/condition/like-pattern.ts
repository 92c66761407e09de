/**
 * T-SQL LIKE patterns for PostgreSQL. T-SQL knows `%`, `_`, `[abc]`, `[a-z]`, `[^a-z]` and an
 * optional ESCAPE character, and has no default escape; PostgreSQL LIKE has no character classes
 * and uses `\` as its default escape. A pattern without (multi-character) classes becomes an
 * ILIKE pattern escaped with `\`; one with classes becomes an anchored, case-insensitive POSIX
 * regular expression (`~*`) with the same meaning.
 */

type Segment =
  | { readonly type: 'literal'; readonly char: string }
  | { readonly type: 'any' }
  | { readonly type: 'one' }
  | {
      readonly type: 'class';
      readonly negated: boolean;
      readonly items: readonly (string | readonly [string, string])[];
    };

export interface PgLikePattern {
  /** `ilike`: use with ILIKE (escape `\`); `regex`: use with `~*`. */
  readonly operator: 'ilike' | 'regex';
  readonly pattern: string;
}

/** Thrown (and turned into a ConditionError by the caller) for a malformed pattern. */
export class LikePatternError extends Error {}

function parse(pattern: string, escapeChar: string | undefined): Segment[] {
  const chars = [...pattern];
  const segments: Segment[] = [];
  let i = 0;
  while (i < chars.length) {
    const ch = chars[i]!;
    if (escapeChar !== undefined && ch === escapeChar) {
      const escaped = chars[i + 1];
      if (escaped === undefined)
        throw new LikePatternError('The LIKE pattern ends with its ESCAPE character');
      segments.push({ type: 'literal', char: escaped });
      i += 2;
    } else if (ch === '%') {
      segments.push({ type: 'any' });
      i++;
    } else if (ch === '_') {
      segments.push({ type: 'one' });
      i++;
    } else if (ch === '[') {
      let j = i + 1;
      const negated = chars[j] === '^';
      if (negated) j++;
      const end = chars.indexOf(']', j);
      if (end < 0) throw new LikePatternError('The LIKE pattern has a "[" without a closing "]"');
      if (end === j) throw new LikePatternError('The LIKE pattern has an empty character class "[]"');
      const items: (string | readonly [string, string])[] = [];
      for (let k = j; k < end; k++) {
        const from = chars[k]!;
        if (chars[k + 1] === '-' && k + 2 < end) {
          const to = chars[k + 2]!;
          if (from.codePointAt(0)! > to.codePointAt(0)!) {
            throw new LikePatternError(`The LIKE pattern has an invalid range "${from}-${to}"`);
          }
          items.push([from, to]);
          k += 2;
        } else {
          items.push(from);
        }
      }
      const only = items[0];
      if (!negated && items.length === 1 && typeof only === 'string') {
        segments.push({ type: 'literal', char: only });
      } else {
        segments.push({ type: 'class', negated, items });
      }
      i = end + 1;
    } else {
      segments.push({ type: 'literal', char: ch });
      i++;
    }
  }
  return segments;
}

const REGEX_SPECIAL = /[\\^$.|?*+()[\]{}]/;
const CLASS_SPECIAL = /[\\^\-[\]]/;

function regexOf(segment: Segment, inClass: (char: string) => string): string {
  switch (segment.type) {
    case 'any':
      return '.*';
    case 'one':
      return '.';
    case 'literal':
      return REGEX_SPECIAL.test(segment.char) ? `\\${segment.char}` : segment.char;
    case 'class': {
      const items = segment.items
        .map((item) => (typeof item === 'string' ? inClass(item) : `${inClass(item[0])}-${inClass(item[1])}`))
        .join('');
      return `[${segment.negated ? '^' : ''}${items}]`;
    }
  }
}

/** How many wildcards (`%`, `_`, `[…]` classes) a valid T-SQL LIKE pattern holds. */
export function countLikeWildcards(pattern: string, escapeChar: string | undefined): number {
  return parse(pattern, escapeChar).filter((segment) => segment.type !== 'literal').length;
}

/** Validates a T-SQL LIKE pattern; throws LikePatternError. */
export function checkLikePattern(pattern: string, escapeChar: string | undefined): void {
  parse(pattern, escapeChar);
}

/** Translates a T-SQL LIKE pattern (with its optional ESCAPE character) for PostgreSQL. */
export function translateLikePattern(pattern: string, escapeChar: string | undefined): PgLikePattern {
  const segments = parse(pattern, escapeChar);
  if (!segments.some((segment) => segment.type === 'class')) {
    const text = segments
      .map((segment) => {
        if (segment.type === 'any') return '%';
        if (segment.type === 'one') return '_';
        if (segment.type === 'literal')
          return /[%_\\]/.test(segment.char) ? `\\${segment.char}` : segment.char;
        return '';
      })
      .join('');
    return { operator: 'ilike', pattern: text };
  }
  const inClass = (char: string) => (CLASS_SPECIAL.test(char) ? `\\${char}` : char);
  const body = segments.map((segment) => regexOf(segment, inClass)).join('');
  return { operator: 'regex', pattern: `^${body}$` };
}
