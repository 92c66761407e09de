import { registerAfterAnswerExtension } from '../../shared/lambda/after-answer.js';
import { dataApiHandler } from '../../shared/lambda/data-api.js';
import { getFileRoute } from '../../shared/lambda/get-file.js';

// During init, as Lambda requires: the tenant's slot goes back after the answer (after-answer.ts).
await registerAfterAnswerExtension();

/** GET /{tenant}/JsonAPI/File/getFile/{fileGUID} */
export const handler = dataApiHandler(getFileRoute, 'files.read');
