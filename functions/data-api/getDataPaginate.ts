import { getDataPaginate } from '../../shared/core/data-api/read.js';
import { dataApiReadHandler, singleQueryParam } from '../../shared/lambda/data-api.js';

/** GET /{tenant}/JsonAPI/Data/getDataPaginate/{DataSource}?fromRow=&rows=[&columns=] or ?after=&rows=[&columns=] */
export const handler = dataApiReadHandler((ctx, request) =>
  getDataPaginate(ctx, request.params.dataSource ?? '', {
    fromRow: singleQueryParam(request, 'fromRow', 'invalid_paging'),
    rows: singleQueryParam(request, 'rows', 'invalid_paging'),
    after: singleQueryParam(request, 'after', 'invalid_cursor'),
    columns: singleQueryParam(request, 'columns', 'invalid_columns'),
  }),
);
