import { getDataAsyncOnce } from '../../shared/core/web-api/async-calls.js';
import { registerAfterAnswerExtension } from '../../shared/lambda/after-answer.js';
import { signedCallRoute, webApiHandler } from '../../shared/lambda/web-api/http.js';
import { webApiJobQueue } from '../../shared/lambda/web-api/job-queue.js';

// During init, as Lambda requires: the tenant's slot goes back after the answer (after-answer.ts).
await registerAfterAnswerExtension();

/** POST /{tenant}/WebAPI/getDataAsync */
export const handler = webApiHandler(
  signedCallRoute((ctx, call) => getDataAsyncOnce(ctx, call, webApiJobQueue())),
);
