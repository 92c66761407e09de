import { getDataOnce } from '../../shared/core/web-api/calls.js';
import { registerAfterAnswerExtension } from '../../shared/lambda/after-answer.js';
import { signedCallRoute, webApiHandler } from '../../shared/lambda/web-api/http.js';

// During init, as Lambda requires: the tenant's slot goes back after the answer (after-answer.ts).
await registerAfterAnswerExtension();

/** POST /{tenant}/WebAPI/getData */
export const handler = webApiHandler(signedCallRoute(getDataOnce));
