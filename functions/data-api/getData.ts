import { getData } from '../../shared/core/data-api/read.js';
import { registerAfterAnswerExtension } from '../../shared/lambda/after-answer.js';
import { dataApiReadHandler, singleQueryParam } from '../../shared/lambda/data-api.js';

// During init, as Lambda requires: the tenant's slot goes back after the answer (after-answer.ts).
await registerAfterAnswerExtension();

/** GET /{tenant}/JsonAPI/Data/getData/{DataSource}[?columns=] */
export const handler = dataApiReadHandler((ctx, request) =>
  getData(ctx, request.params.dataSource ?? '', singleQueryParam(request, 'columns', 'invalid_columns')),
);
