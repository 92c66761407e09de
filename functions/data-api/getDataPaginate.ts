import { getDataPaginate } from '../../shared/core/data-api/read.js';
import { registerAfterAnswerExtension } from '../../shared/lambda/after-answer.js';
import { dataApiReadHandler, singleQueryParam } from '../../shared/lambda/data-api.js';

// During init, as Lambda requires: the tenant's slot goes back after the answer (after-answer.ts).
await registerAfterAnswerExtension();

/** GET /{tenant}/JsonAPI/Data/getDataPaginate/{DataSource}?fromRow=&rows=[&columns=] or ?after=&rows=[&columns=] */
export const handler = dataApiReadHandler((ctx, request) =>
  getDataPaginate(ctx, request.params.dataSource ?? '', {
    fromRow: singleQueryParam(request, 'fromRow', 'invalid_paging'),
    rows: singleQueryParam(request, 'rows', 'invalid_paging'),
    after: singleQueryParam(request, 'after', 'invalid_cursor'),
    columns: singleQueryParam(request, 'columns', 'invalid_columns'),
  }),
);
