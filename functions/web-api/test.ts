import { testRoute, webApiHandler } from '../../shared/lambda/web-api/http.js';

/** GET /{tenant}/WebAPI/test */
export const handler = webApiHandler(testRoute);
