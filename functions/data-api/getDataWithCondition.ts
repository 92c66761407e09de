import { getDataWithCondition } from '../../shared/core/data-api/read.js';
import { dataApiReadHandler } from '../../shared/lambda/data-api.js';

/** GET /{tenant}/JsonAPI/Data/getDataWithCondition/{DataSource}?condition= */
export const handler = dataApiReadHandler((ctx, request) =>
  getDataWithCondition(ctx, request.params.dataSource ?? '', request.query.get('condition') ?? undefined),
);
