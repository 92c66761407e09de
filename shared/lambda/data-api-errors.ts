import type { ServiceError } from '../core/errors.js';
import { type HttpRequest, type RenderedError, toServiceError } from './http.js';

/** What an answer may tell of what was thrown: the error, and its message or only that it failed. */
export function answerableError(thrown: unknown): { readonly error: ServiceError; readonly message: string } {
  const error = toServiceError(thrown);
  return { error, message: error.expose ? error.message : 'The request could not be completed' };
}

/** The Data API's error body: `{"error":{"code","message","requestId"}}`. */
export function renderDataApiError(
  thrown: unknown,
  _request: HttpRequest | undefined,
  requestId: string,
): RenderedError {
  const { error, message } = answerableError(thrown);
  return {
    code: error.code,
    response: {
      status: error.status,
      headers: { 'content-type': 'application/json; charset=utf-8', ...error.headers },
      body: JSON.stringify({ error: { code: error.code, message, requestId, ...error.details } }),
    },
  };
}
