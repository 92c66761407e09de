import { getDataPaginate } from '../../shared/core/data-api/read.js';
import { dataApiReadHandler } from '../../shared/lambda/data-api.js';

/** GET /{tenant}/JsonAPI/Data/getDataPaginate/{DataSource}?fromRow=&rows= */
export const handler = dataApiReadHandler((ctx, request) =>
  getDataPaginate(
    ctx,
    request.params.dataSource ?? '',
    request.query.get('fromRow') ?? undefined,
    request.query.get('rows') ?? undefined,
  ),
);
