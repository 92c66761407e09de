/**
 * The condition language of `getDataWithCondition`: one T-SQL boolean expression over the
 * columns of a data source, parsed by a strict hand-written parser and compiled to parameterised
 * SQL for SQL Server or PostgreSQL. The input is never pasted into SQL: columns are quoted from
 * the catalogue, every literal is a parameter, and anything outside the small language is refused
 * with a {@link ConditionError} naming the problem and its position.
 *
 * Decisions:
 * - Numbers: integers that fit `int` are sent as JS numbers; other numbers (decimals, larger
 *   integers) are sent as their exact text and cast in SQL (`CAST(@p1 AS DECIMAL(6,2))` /
 *   `CAST($1 AS numeric)`), so `1234.50` is never turned into a float. Exponent notation (`1e3`)
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
 * Known differences of the PostgreSQL translation: trailing spaces are significant in text
 * comparisons; DATETIME/DATETIME2 map to timestamp(0) (fractions of a second are rounded);
 * a date converted to text without a CONVERT style uses the ISO format.
 */
import type { ColumnInfo, SqlDialect } from '../database.js';
import { type CompiledCondition, compileAst } from './compile.js';
import { ConditionError } from './errors.js';
import { parseCondition } from './parser.js';

export type { CompiledCondition } from './compile.js';
export { ConditionError } from './errors.js';
export { MAX_CONDITION_LENGTH, MAX_NESTING } from './parser.js';

/**
 * Parses `input` and compiles it for `dialect`; placeholders start at `firstParamIndex`
 * (1-based). Throws ConditionError for anything outside the language.
 */
export function compileCondition(
  input: string,
  columns: readonly ColumnInfo[],
  dialect: SqlDialect,
  firstParamIndex = 1,
): CompiledCondition {
  if (!Number.isSafeInteger(firstParamIndex) || firstParamIndex < 1) {
    throw new RangeError(`firstParamIndex must be a positive integer, got ${firstParamIndex}`);
  }
  try {
    return compileAst(parseCondition(input, columns), dialect, firstParamIndex);
  } catch (error) {
    if (error instanceof RangeError && /call stack/i.test(error.message)) {
      // The limits should prevent it; if a pathological input still overflows, it is a 400, not a 500.
      throw new ConditionError('The condition is too complex (position 1)', 1);
    }
    throw error;
  }
}
