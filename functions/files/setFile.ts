import { renderDataApiError } from '../../shared/lambda/data-api.js';
import { httpHandler } from '../../shared/lambda/http.js';
import { setFileRoute } from '../../shared/lambda/set-file.js';

/** POST /{tenant}/JsonAPI/File/setFile[?userDBProcedure=NAME] */
export const handler = httpHandler(setFileRoute, renderDataApiError);
