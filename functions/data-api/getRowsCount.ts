import { getRowsCount } from '../../shared/core/data-api/read.js';
import { registerAfterAnswerExtension } from '../../shared/lambda/after-answer.js';
import { dataApiReadHandler } from '../../shared/lambda/data-api.js';

// During init, as Lambda requires: the tenant's slot goes back after the answer (after-answer.ts).
await registerAfterAnswerExtension();

/** GET /{tenant}/JsonAPI/Data/getRowsCount/{DataSource} */
export const handler = dataApiReadHandler((ctx, request) =>
  getRowsCount(ctx, request.params.dataSource ?? ''),
);
