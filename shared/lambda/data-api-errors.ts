import { type HttpRequest, type RenderedError, toServiceError } from './http.js';

/** The Data API's error body: `{"error":{"code","message","requestId"}}`. */
export function renderDataApiError(
  thrown: unknown,
  _request: HttpRequest | undefined,
  requestId: string,
): RenderedError {
  const error = toServiceError(thrown);
  const message = error.expose ? error.message : 'The request could not be completed';
  return {
    code: error.code,
    response: {
      status: error.status,
      headers: { 'content-type': 'application/json; charset=utf-8', ...error.headers },
      body: JSON.stringify({ error: { code: error.code, message, requestId, ...error.details } }),
    },
  };
}
