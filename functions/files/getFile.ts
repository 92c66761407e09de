import { renderDataApiError } from '../../shared/lambda/data-api.js';
import { getFileRoute } from '../../shared/lambda/get-file.js';
import { httpHandler } from '../../shared/lambda/http.js';

/** GET /{tenant}/JsonAPI/File/getFile/{fileGUID} */
export const handler = httpHandler(getFileRoute, renderDataApiError);
