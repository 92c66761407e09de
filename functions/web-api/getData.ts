import { getData } from '../../shared/core/web-api/calls.js';
import { signedCallRoute, webApiHandler } from '../../shared/lambda/web-api/http.js';

/** POST /{tenant}/WebAPI/getData */
export const handler = webApiHandler(signedCallRoute(getData));
