/** Collects the parameters of a compiled condition and hands out their placeholders. */
import { ConditionError } from './errors.js';

export interface CompiledCondition {
  /** A parenthesised boolean expression for a WHERE clause; literals are placeholders. */
  sql: string;
  /** The values of the placeholders, in placeholder order from the first index. */
  params: unknown[];
}

/** Most parameters one condition may use (SQL Server allows 2100 per statement, the caller adds some). */
export const MAX_PARAMS = 2000;
/** Longest SQL a condition may compile to (the PostgreSQL translation repeats some operands). */
export const MAX_SQL_LENGTH = 200_000;

export class ParamSink {
  readonly params: unknown[] = [];
  constructor(
    /** The dialect's placeholder of a 1-based parameter index. */
    private readonly placeholder: (index: number) => string,
    private readonly firstIndex: number,
  ) {}

  /** Adds `value` and returns its placeholder. */
  add(value: unknown): string {
    if (this.params.length >= MAX_PARAMS) {
      throw new ConditionError(
        `The condition is too complex: it needs more than ${MAX_PARAMS} parameters (position 1)`,
        1,
      );
    }
    this.params.push(value);
    return this.placeholder(this.firstIndex + this.params.length - 1);
  }
}

/** Refuses compiled SQL that grew beyond {@link MAX_SQL_LENGTH}. */
export function limitSize(sql: string): string {
  if (sql.length > MAX_SQL_LENGTH) {
    throw new ConditionError('The condition is too complex: its translation is too long (position 1)', 1);
  }
  return sql;
}
