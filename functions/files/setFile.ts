import { registerAfterAnswerExtension } from '../../shared/lambda/after-answer.js';
import { dataApiHandler } from '../../shared/lambda/data-api.js';
import { setFileRoute } from '../../shared/lambda/set-file.js';

// During init, as Lambda requires: the tenant's slot goes back after the answer (after-answer.ts).
await registerAfterAnswerExtension();

/** POST /{tenant}/JsonAPI/File/setFile[?userDBProcedure=NAME] */
export const handler = dataApiHandler(setFileRoute, 'files.write');
