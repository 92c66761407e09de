import { getData } from '../../shared/core/data-api/read.js';
import { dataApiReadHandler } from '../../shared/lambda/data-api.js';

/** GET /{tenant}/JsonAPI/Data/getData/{DataSource} */
export const handler = dataApiReadHandler((ctx, request) => getData(ctx, request.params.dataSource ?? ''));
