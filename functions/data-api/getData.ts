import { getData } from '../../shared/core/data-api/read.js';
import { dataApiReadHandler, singleQueryParam } from '../../shared/lambda/data-api.js';

/** GET /{tenant}/JsonAPI/Data/getData/{DataSource}[?columns=] */
export const handler = dataApiReadHandler((ctx, request) =>
  getData(ctx, request.params.dataSource ?? '', singleQueryParam(request, 'columns', 'invalid_columns')),
);
