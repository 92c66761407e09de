import { registerAfterAnswerExtension } from '../../shared/lambda/after-answer.js';
import { testRoute, webApiHandler } from '../../shared/lambda/web-api/http.js';

// During init, as Lambda requires: the tenant's slot goes back after the answer (after-answer.ts).
await registerAfterAnswerExtension();

/** GET /{tenant}/WebAPI/test */
export const handler = webApiHandler(testRoute);
