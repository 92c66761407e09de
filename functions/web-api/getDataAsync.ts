import { getDataAsync } from '../../shared/core/web-api/async-calls.js';
import { signedCallRoute, webApiHandler } from '../../shared/lambda/web-api/http.js';
import { webApiJobQueue } from '../../shared/lambda/web-api/job-queue.js';

/** POST /{tenant}/WebAPI/getDataAsync */
export const handler = webApiHandler(
  signedCallRoute((ctx, call) => getDataAsync(ctx, call, webApiJobQueue())),
);
