/**
 * Tokeniser of the condition language. It refuses everything that cannot be part of a single
 * T-SQL boolean expression (statement separators, comments, variables, qualified names, ...)
 * before the parser runs, so the parser only ever sees a small, closed set of tokens.
 */
import { conditionError } from './errors.js';

export type TokenType = 'word' | 'ident' | 'string' | 'number' | 'op' | '(' | ')' | ',' | 'eof';

export interface Token {
  readonly type: TokenType;
  /**
   * word: the word upper-cased; ident: the identifier without quotes; string: the value without
   * quotes; number: the digits as written; op: the operator (`!=` is normalised to `<>`).
   */
  readonly value: string;
  /** The source text of the token (for messages). */
  readonly text: string;
  /** UTF-16 offset of the first character. */
  readonly pos: number;
}

const WHITESPACE = new Set([' ', '\t', '\n', '\r', '\f', '\v']);
const WORD = /[\p{L}_][\p{L}\p{M}\p{Nd}_]*/uy;
const WORD_CHAR = /[\p{L}\p{M}\p{Nd}_]/u;
const NUMBER = /\d+(?:\.\d*)?|\.\d+/y;
const EXPONENT = /[eE][+-]?\d/y;
const VARIABLE = /@@?[\p{L}\p{M}\p{Nd}_@#$]*/uy;
const SINGLE_OPS = new Set(['=', '+', '-', '*', '/', '%']);
const BITWISE_OPS = new Set(['&', '|', '^', '~']);

/** Describes a character for a message: printable as itself, others as U+XXXX. */
function describeChar(ch: string): string {
  const code = ch.codePointAt(0) ?? 0;
  if (code < 0x20 || (code >= 0x7f && code < 0xa0) || code === 0xfeff || (code >= 0x2000 && code <= 0x200f)) {
    return `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
  }
  return `"${ch}"`;
}

/** Splits `source` into tokens, ending with one `eof` token. Throws ConditionError. */
export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  const error = (offset: number, problem: string) => conditionError(source, offset, problem);
  let i = 0;

  const push = (type: TokenType, value: string, start: number) => {
    tokens.push({ type, value, text: source.slice(start, i), pos: start });
  };

  /** Reads a quoted run closed by `close`, where a doubled `close` stands for itself. */
  const readQuoted = (start: number, open: number, close: string, what: string): string => {
    let value = '';
    let j = open;
    for (;;) {
      const end = source.indexOf(close, j);
      if (end < 0) {
        throw conditionError(source, start, `Unterminated ${what} starting`);
      }
      value += source.slice(j, end);
      if (source[end + 1] === close) {
        value += close;
        j = end + 2;
        continue;
      }
      i = end + 1;
      return value;
    }
  };

  const rejectQualifier = () => {
    let j = i;
    while (j < source.length && WHITESPACE.has(source[j]!)) j++;
    if (source[j] === '.' && !/\d/.test(source[j + 1] ?? '')) {
      throw error(j, 'Qualified names (schema.table.column) are not allowed: found "."');
    }
  };

  while (i < source.length) {
    const ch = source[i]!;
    const next = source[i + 1];
    const start = i;

    if (WHITESPACE.has(ch)) {
      i++;
      continue;
    }
    if ((ch === '-' && next === '-') || (ch === '/' && next === '*')) {
      throw conditionError(
        source,
        start,
        'Comments are not allowed',
        (problem, position) => `${problem} (position ${position})`,
      );
    }
    if (ch === ';') {
      throw conditionError(
        source,
        start,
        'Unexpected ";"',
        (problem, position) => `${problem} at position ${position}: only one boolean expression is allowed`,
      );
    }
    if (ch === "'" || ((ch === 'N' || ch === 'n') && next === "'")) {
      const open = ch === "'" ? i + 1 : i + 2;
      const value = readQuoted(start, open, "'", 'string literal');
      push('string', value, start);
      continue;
    }
    if (ch === '[') {
      const name = readQuoted(start, i + 1, ']', 'bracketed identifier');
      if (name.trim() === '') throw error(start, 'Empty identifier "[]"');
      push('ident', name, start);
      rejectQualifier();
      continue;
    }
    if (ch === '"') {
      const name = readQuoted(start, i + 1, '"', 'quoted identifier');
      if (name.trim() === '') throw error(start, 'Empty identifier """"');
      push('ident', name, start);
      rejectQualifier();
      continue;
    }
    if (ch === '@') {
      VARIABLE.lastIndex = i;
      const name = VARIABLE.exec(source)?.[0] ?? '@';
      const what = name.startsWith('@@') ? 'System variable' : 'Variable';
      throw error(start, `${what} "${name.slice(0, 40)}" is not allowed`);
    }
    NUMBER.lastIndex = i;
    const number = /[\d.]/.test(ch) ? NUMBER.exec(source) : null;
    if (number) {
      i += number[0].length;
      EXPONENT.lastIndex = i;
      if (EXPONENT.test(source)) {
        throw error(start, `Exponent notation ("${source.slice(start, EXPONENT.lastIndex)}") is not allowed`);
      }
      if (number[0] === '0' && (source[i] === 'x' || source[i] === 'X')) {
        throw error(start, 'Binary literals (0x...) are not allowed');
      }
      const after = source.codePointAt(i);
      if (after !== undefined && (WORD_CHAR.test(String.fromCodePoint(after)) || after === 0x2e)) {
        WORD.lastIndex = i;
        const rest = source[i] === '.' ? '.' : (WORD.exec(source)?.[0] ?? '');
        throw error(start, `Invalid number "${`${number[0]}${rest}`.slice(0, 40)}"`);
      }
      push('number', number[0], start);
      continue;
    }
    if (ch === '.') {
      throw error(start, 'Qualified names (schema.table.column) are not allowed: found "."');
    }
    WORD.lastIndex = i;
    const word = WORD.exec(source);
    if (word) {
      i += word[0].length;
      push('word', word[0].toUpperCase(), start);
      rejectQualifier();
      continue;
    }
    if (ch === '<' || ch === '>') {
      i += next === '=' || (ch === '<' && next === '>') ? 2 : 1;
      push('op', source.slice(start, i), start);
      continue;
    }
    if (ch === '!') {
      if (next === '=') {
        i += 2;
        push('op', '<>', start);
        continue;
      }
      const op = next === '<' || next === '>' ? `!${next}` : '!';
      throw error(start, `Operator "${op}" is not allowed`);
    }
    if (SINGLE_OPS.has(ch)) {
      i++;
      push('op', ch, start);
      continue;
    }
    if (ch === '(' || ch === ')' || ch === ',') {
      i++;
      push(ch, ch, start);
      continue;
    }
    if (BITWISE_OPS.has(ch)) {
      throw error(start, `Operator "${ch}" is not allowed`);
    }
    const codePoint = String.fromCodePoint(source.codePointAt(i) ?? 0);
    throw error(start, `Unexpected character ${describeChar(codePoint)}`);
  }
  tokens.push({ type: 'eof', value: '', text: '', pos: source.length });
  return tokens;
}
