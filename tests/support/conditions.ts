import { translateEmbeddedCondition } from '../../shared/adapters/embedded-sql/condition.js';
import { translateMssqlCondition } from '../../shared/adapters/mssql/condition.js';
import { type CompiledCondition, compileConditionWith } from '../../shared/core/condition/index.js';
import type { ColumnInfo, SqlDialect } from '../../shared/core/database.js';

/** Parses, checks and translates `input` with the condition compiler of `dialect`'s adapter. */
export function compileCondition(
  input: string,
  columns: readonly ColumnInfo[],
  dialect: SqlDialect,
  firstParamIndex = 1,
): CompiledCondition {
  const translate = dialect.name === 'mssql' ? translateMssqlCondition : translateEmbeddedCondition;
  return compileConditionWith(translate, input, columns, firstParamIndex);
}
