import { getRowsCount } from '../../shared/core/data-api/read.js';
import { dataApiReadHandler } from '../../shared/lambda/data-api.js';

/** GET /{tenant}/JsonAPI/Data/getRowsCount/{DataSource} */
export const handler = dataApiReadHandler((ctx, request) =>
  getRowsCount(ctx, request.params.dataSource ?? ''),
);
