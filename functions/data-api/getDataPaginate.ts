import { getDataPaginate } from '../../shared/core/data-api/read.js';
import { dataApiReadHandler, singleQueryParam } from '../../shared/lambda/data-api.js';

/** GET /{tenant}/JsonAPI/Data/getDataPaginate/{DataSource}?fromRow=&rows= */
export const handler = dataApiReadHandler((ctx, request) =>
  getDataPaginate(
    ctx,
    request.params.dataSource ?? '',
    singleQueryParam(request, 'fromRow', 'invalid_paging'),
    singleQueryParam(request, 'rows', 'invalid_paging'),
  ),
);
