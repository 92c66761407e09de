import { registerAfterAnswerExtension } from '../../shared/lambda/after-answer.js';
import { renderDataApiError } from '../../shared/lambda/data-api.js';
import { httpHandler } from '../../shared/lambda/http.js';
import { setFileRoute } from '../../shared/lambda/set-file.js';

// During init, as Lambda requires: the tenant's slot goes back after the answer (after-answer.ts).
await registerAfterAnswerExtension();

/** POST /{tenant}/JsonAPI/File/setFile[?userDBProcedure=NAME] */
export const handler = httpHandler(setFileRoute, renderDataApiError);
