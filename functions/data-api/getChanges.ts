import { registerAfterAnswerExtension } from '../../shared/lambda/after-answer.js';
import { changesHandler } from '../../shared/lambda/get-changes.js';

// During init, as Lambda requires: the tenant's slot goes back after the answer (after-answer.ts).
await registerAfterAnswerExtension();

/** GET /{tenant}/JsonAPI/Data/getChanges/{DataSource}[?token=][&rows=][&columns=] */
export const handler = changesHandler();
