/** Compiles a checked condition for a dialect. */
import type { SqlDialect } from '../database.js';
import type { Condition } from './ast.js';
import { MssqlCompiler } from './compile-mssql.js';
import { PostgresCompiler } from './compile-postgres.js';
import { ParamSink } from './params.js';

export interface CompiledCondition {
  /** A parenthesised boolean expression for a WHERE clause; literals are placeholders. */
  sql: string;
  /** The values of the placeholders, in placeholder order from `firstParamIndex`. */
  params: unknown[];
}

export function compileAst(
  condition: Condition,
  dialect: SqlDialect,
  firstParamIndex: number,
): CompiledCondition {
  const sink = new ParamSink(dialect, firstParamIndex);
  const compiler =
    dialect.name === 'postgres' ? new PostgresCompiler(dialect, sink) : new MssqlCompiler(dialect, sink);
  const sql = compiler.condition(condition);
  return { sql, params: sink.params };
}
