import { translateEmbeddedCondition } from '../../shared/adapters/embedded/condition.js';
import { translateMssqlCondition } from '../../shared/adapters/mssql/condition.js';
import { getDataWithCondition } from '../../shared/core/data-api/read.js';
import { registerAfterAnswerExtension } from '../../shared/lambda/after-answer.js';
import { dataApiReadHandler, singleQueryParam } from '../../shared/lambda/data-api.js';

// During init, as Lambda requires: the tenant's slot goes back after the answer (after-answer.ts).
await registerAfterAnswerExtension();

/** GET /{tenant}/JsonAPI/Data/getDataWithCondition/{DataSource}?condition=[&columns=] */
export const handler = dataApiReadHandler(
  (ctx, request) =>
    getDataWithCondition(
      ctx,
      request.params.dataSource ?? '',
      singleQueryParam(request, 'condition', 'invalid_condition'),
      singleQueryParam(request, 'columns', 'invalid_columns'),
    ),
  { mssql: translateMssqlCondition, embedded: translateEmbeddedCondition },
);
