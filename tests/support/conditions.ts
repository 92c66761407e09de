import { translateEmbeddedCondition } from '../../shared/adapters/embedded/condition.js';
import { createEmbeddedDataSourceReader } from '../../shared/adapters/embedded/data-source-reader.js';
import { translateMssqlCondition } from '../../shared/adapters/mssql/condition.js';
import { createMssqlDataSourceReader } from '../../shared/adapters/mssql/data-source-reader.js';
import { type CompiledCondition, compileConditionWith } from '../../shared/core/condition/index.js';
import { type DataApiContext, getDataWithCondition } from '../../shared/core/data-api/read.js';
import type { ColumnInfo, Database, SqlDialect } from '../../shared/core/database.js';
import { ServiceError } from '../../shared/core/errors.js';

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

/**
 * The Data API's read context on `db`, with the reader and condition compiler of its dialect (as in
 * Lambda), every data source allowed and every answer inline: for comparing answers whole.
 */
export function conditionReadContext(db: Database): DataApiContext {
  return {
    tenant: 'demo',
    reader:
      db.dialect.name === 'mssql'
        ? createMssqlDataSourceReader(db, translateMssqlCondition)
        : createEmbeddedDataSourceReader(db, translateEmbeddedCondition),
    allowed: '*',
    limits: {
      inlineLimitBytes: 64 * 1024 * 1024,
      presignSeconds: 60,
      store: undefined,
      keyPrefix: 'conditions',
    },
    batchRows: 1000,
  };
}

/** What `getDataWithCondition` answers: the exact body, or the refusal's status, code and message. */
export type ConditionOutcome = { readonly body: string } | { readonly error: string };

export async function answerCondition(
  ctx: DataApiContext,
  table: string,
  condition: string,
): Promise<ConditionOutcome> {
  try {
    const result = await getDataWithCondition(ctx, table, condition);
    if (result.kind !== 'inline') throw new Error(`unexpected ${result.kind} answer`);
    return { body: Buffer.from(result.body).toString('utf8') };
  } catch (error) {
    if (error instanceof ServiceError) return { error: `${error.status} ${error.code}: ${error.message}` };
    throw error;
  }
}
