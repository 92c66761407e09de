/**
 * The condition language of `getDataWithCondition`: one T-SQL boolean expression over the
 * columns of a data source, parsed by a strict hand-written parser and compiled to parameterised
 * SQL for SQL Server or PostgreSQL. The input is never pasted into SQL: columns are quoted from
 * the catalogue, every literal is a parameter, and anything outside the small language is refused
 * with a {@link ConditionError} naming the problem and its position.
 *
 * Decisions:
 * - Numbers: integers that fit `int` are sent as JS numbers; other numbers (decimals, larger
 *   integers) are sent as their exact text and cast in SQL to the literal's
 *   decimal type (SQL Server) or to numeric (PostgreSQL), so `1234.50` is never turned into a float. Exponent notation (`1e3`)
 *   is refused.
 * - LIKE `[...]` classes: translated for PostgreSQL (a literal pattern with classes becomes an
 *   anchored case-insensitive regular expression); a computed pattern is matched with ILIKE and
 *   no escape character, where `[` is an ordinary character.
 * - BIT in CAST/CONVERT: PostgreSQL integer 0/1 (compares with 0 and 1 like T-SQL bit).
 * - The top level, the operands of AND/OR/NOT and nothing else must be boolean predicates
 *   (comparison, LIKE, IN, BETWEEN, IS NULL); a bare value such as `NAZEV` or `1+1` is refused,
 *   and a predicate cannot be used as a value, as in T-SQL.
 * - Types: every value gets a kind (text, number, datetime, date, time, uniqueidentifier, bit);
 *   operands are converted following T-SQL data type precedence, and combinations T-SQL would
 *   only accept with surprising results (numbers as dates, `datetime + 1`, ...) are refused.
 *
 * Known differences of the PostgreSQL translation: DATETIME/DATETIME2 map to timestamp(0)
 * (fractions of a second are rounded); a date converted to text without a CONVERT style uses the
 * ISO format. Text compares as SQL Server's default collation does (case-insensitive, trailing
 * spaces ignored, Unicode order); tests/tsql checks both translations against a T-SQL engine.
 */
import type { ColumnInfo } from '../database.js';
import type { Condition } from './ast.js';
import { ConditionError } from './errors.js';
import { type CompiledCondition, ParamSink } from './params.js';
import { parseCondition } from './parser.js';

export type { Condition } from './ast.js';
export { ConditionError } from './errors.js';
export { type CompiledCondition, limitSize, ParamSink } from './params.js';
export { MAX_CONDITION_LENGTH, MAX_LIKE_WILDCARDS, MAX_NESTING } from './parser.js';

/** Runs a parse or a translation; a call stack overflow on a pathological input is a ConditionError. */
function withinStack<T>(work: () => T): T {
  try {
    return work();
  } catch (error) {
    if (error instanceof RangeError && /call stack/i.test(error.message)) {
      // The limits should prevent it; if a pathological input still overflows, it is a 400, not a 500.
      throw new ConditionError('The condition is too complex (position 1)', 1);
    }
    throw error;
  }
}

function checkFirstIndex(firstParamIndex: number): void {
  if (!Number.isSafeInteger(firstParamIndex) || firstParamIndex < 1) {
    throw new RangeError(`firstParamIndex must be a positive integer, got ${firstParamIndex}`);
  }
}

/** Parses and checks `input` against the columns of a data source. Throws ConditionError. */
export function checkCondition(input: string, columns: readonly ColumnInfo[]): Condition {
  return withinStack(() => parseCondition(input, columns));
}

/** A dialect's translation of a checked condition, placeholders from `firstParamIndex` (1-based). */
export type ConditionTranslator = (condition: Condition, firstParamIndex: number) => CompiledCondition;

/**
 * Translates a checked condition with a dialect's translator (the SQL adapters own them);
 * placeholders start at `firstParamIndex` (1-based). Throws ConditionError when it is too large.
 */
export function translateCondition(
  condition: Condition,
  translator: ConditionTranslator,
  firstParamIndex = 1,
): CompiledCondition {
  checkFirstIndex(firstParamIndex);
  return withinStack(() => translator(condition, firstParamIndex));
}

/** A dialect's translator from its compiler: fresh parameters per condition, placeholders from the first index. */
export function dialectTranslator(
  placeholder: (index: number) => string,
  compile: (condition: Condition, sink: ParamSink) => string,
): ConditionTranslator {
  return (condition, firstParamIndex) => {
    const sink = new ParamSink(placeholder, firstParamIndex);
    const sql = compile(condition, sink);
    return { sql, params: sink.params };
  };
}

/** Parses, checks and translates `input` in one step. */
export function compileConditionWith(
  translator: ConditionTranslator,
  input: string,
  columns: readonly ColumnInfo[],
  firstParamIndex = 1,
): CompiledCondition {
  checkFirstIndex(firstParamIndex);
  return translateCondition(checkCondition(input, columns), translator, firstParamIndex);
}
