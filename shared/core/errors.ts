/**
 * Errors that the service answers with. `expose` is true below 500: only then does the message
 * reach the client; anything else becomes a plain 500 so internals never leak.
 */
export class ServiceError extends Error {
  override readonly name: string = 'ServiceError';
  readonly expose: boolean;
  constructor(
    readonly status: number,
    /** Machine-readable code in the error body. */
    readonly code: string,
    message: string,
    options?: ErrorOptions & {
      headers?: Record<string, string>;
      details?: Record<string, unknown>;
      /** A 500 whose message is meant for the client (it says what to grant, in the service's words). */
      expose?: boolean;
    },
  ) {
    super(message, options);
    this.expose = options?.expose ?? (status < 500 || status === 502 || status === 503);
    this.headers = options?.headers;
    this.details = options?.details;
  }
  /** Extra response headers (e.g. `WWW-Authenticate`). */
  readonly headers: Record<string, string> | undefined;
  /** Extra fields for the error body (e.g. the `fileGUID` of a file kept after a failed procedure). */
  readonly details: Record<string, unknown> | undefined;
}

export const badRequest = (code: string, message: string) => new ServiceError(400, code, message);
export const notFound = (code: string, message: string) => new ServiceError(404, code, message);
