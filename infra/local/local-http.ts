import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Database } from '../../shared/core/database.js';

/**
 * The local server's one place for reading request bodies, understanding request-targets and
 * writing answers: the API Gateway emulation and the local-only routes both go through it.
 */

/** What local-only routes can reach. */
export interface LocalRouteContext {
  readonly database: Database;
  /**
   * Whether the database is there, for /health; by default a `SELECT 1`. The embedded database
   * answers it without waiting behind a statement that runs (one session: a `SELECT 1` would).
   */
  readonly databaseOpen?: () => Promise<boolean>;
  readonly sqs: SQSClient;
  /** Queue URLs by queue name. */
  readonly queueUrls: ReadonlyMap<string, string>;
}

/** The path and query of a request, as a route sees them. */
export interface RequestTarget {
  /** Percent-escapes kept as sent. */
  readonly pathname: string;
  /** Without the `?`. */
  readonly rawQuery: string;
  readonly searchParams: URLSearchParams;
}

export type LocalRoute = (
  request: IncomingMessage,
  response: ServerResponse,
  target: RequestTarget,
) => Promise<void>;

const ORIGIN = 'http://localhost';

/**
 * Reads a request-target (RFC 9112 section 3.2) into a path and query; undefined for anything a
 * route cannot be looked up by, which the caller answers with 400 as API Gateway does. Total: it
 * never throws, whatever the client sent. Accepted: origin-form (`/path?query`) and absolute-form
 * with an http(s) scheme; refused: authority-form, `*`, a path starting `//` (a URL parser would
 * read a host there), and anything a WHATWG URL parser rejects.
 */
export function parseRequestTarget(raw: string | undefined): RequestTarget | undefined {
  if (!raw) return undefined;
  let url: URL;
  try {
    if (raw.startsWith('/')) {
      if (raw.startsWith('//')) return undefined;
      url = new URL(raw, ORIGIN);
      if (url.origin !== ORIGIN) return undefined;
    } else {
      url = new URL(raw);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
    }
  } catch {
    return undefined;
  }
  return { pathname: url.pathname, rawQuery: url.search.slice(1), searchParams: url.searchParams };
}

/**
 * False for a request whose body length cannot be known: a `Transfer-Encoding` that does not end
 * in `chunked` (RFC 9112 section 6.3 requires a 400 and closing; Node would read until the client
 * closes, and the client would wait for an answer).
 */
export function hasDeterminableBody(request: IncomingMessage): boolean {
  const codings = request.headers['transfer-encoding'];
  if (codings === undefined) return true;
  return /(^|,)\s*chunked\s*$/i.test(codings);
}

/** Reads a request's body whole; undefined, and the rest left unread, once it exceeds `maxBytes`. */
export async function readBody(
  request: IncomingMessage,
  maxBytes = Number.POSITIVE_INFINITY,
): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** A request's W3C trace headers (CONTRACT 8a), as `continueTrace` reads them. */
export function traceHeadersOf(request: IncomingMessage): { traceparent?: string; tracestate?: string } {
  const one = (value: string | string[] | undefined) => (Array.isArray(value) ? value.join(',') : value);
  return { traceparent: one(request.headers.traceparent), tracestate: one(request.headers.tracestate) };
}

/** Writes a whole answer with its length; nothing when the client is gone or an answer was started. */
export function sendBytes(
  response: ServerResponse,
  status: number,
  headers: Record<string, string | number | string[]>,
  payload: Buffer | string,
): void {
  if (response.headersSent || response.destroyed || response.writableEnded) return;
  // Text goes to the socket as it is (Node encodes it as it writes): no copy of a page of records
  // into a Buffer of its own first; its length counted in UTF-8 bytes.
  const length = typeof payload === 'string' ? Buffer.byteLength(payload, 'utf8') : payload.length;
  response.writeHead(status, { ...headers, 'content-length': length });
  response.end(payload, 'utf8');
}

export function sendJson(
  response: ServerResponse,
  status: number,
  value: unknown,
  headers: Record<string, string> = {},
): void {
  sendBytes(response, status, { 'content-type': 'application/json', ...headers }, JSON.stringify(value));
}

/** The answers API Gateway gives on its own, in its shape (`{"message": ...}`). */
export const gatewayAnswers = {
  badRequest: { status: 400, message: 'Bad Request' },
  tooLarge: { status: 413, message: 'Request Entity Too Large' },
  headersTooLarge: { status: 431, message: 'Request Header Fields Too Large' },
  internal: { status: 500, message: 'Internal Server Error' },
  unavailable: { status: 503, message: 'Service Unavailable' },
} as const;

/**
 * The local stack's answer to a path no route serves, where API Gateway says only `Not Found`: a
 * newcomer's first mistake is leaving out the tenant, so the message says how routes start and
 * where the reference is (CONTRACT.md section 3).
 */
export function sendRouteNotFound(response: ServerResponse, method: string, pathname: string): void {
  const shown = pathname.length > 100 ? `${pathname.slice(0, 100)}…` : pathname;
  // A client library discovering from an issuer: the one route without the tenant first, and no
  // OpenID Connect document (an OIDC discovery asks `{issuer}/.well-known/openid-configuration`).
  const discovery = pathname.includes('/.well-known/')
    ? "A tenant's OAuth 2.0 authorization server metadata is at /.well-known/oauth-authorization-server/{tenant} " +
      '(RFC 8414, for the issuer /{tenant}; there is no OpenID Connect openid-configuration). '
    : '';
  sendJson(response, 404, {
    message:
      `Not Found: no route for ${method} ${shown}. Routes start with the tenant: /{tenant}/JsonAPI/… and ` +
      '/{tenant}/WebAPI/… (the demo tenant: /demo/JsonAPI/Data/getRowsCount/SUBJECT, /demo/WebAPI/test). ' +
      `${discovery}The API reference is at /docs.`,
    code: 'route_not_found',
  });
}

/**
 * The local stack's answer to a method no route of an existing path serves: 405 with `Allow`, and
 * a message naming the method and the ones the path takes (HTTP API answers 404 `Not Found`).
 */
export function sendMethodNotAllowed(
  response: ServerResponse,
  method: string,
  pathname: string,
  allowed: readonly string[],
): void {
  const shown = pathname.length > 100 ? `${pathname.slice(0, 100)}…` : pathname;
  const methods = [...allowed].sort();
  sendJson(
    response,
    405,
    {
      message:
        `Method Not Allowed: ${shown} takes ${methods.join(', ')}, not ${method.slice(0, 20)}. ` +
        'The API reference is at /docs.',
      code: 'method_not_allowed',
    },
    { allow: methods.join(', ') },
  );
}

export function sendGatewayAnswer(
  response: ServerResponse,
  answer: (typeof gatewayAnswers)[keyof typeof gatewayAnswers],
): void {
  sendJson(response, answer.status, { message: answer.message });
}

/**
 * Answers a request the HTTP parser refused (bad request line, method, header, oversized headers,
 * a time-out) on the raw socket, then closes it: the server's `clientError` handler.
 */
export function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  if (!socket.writable || (socket as Socket & { _httpMessage?: unknown })._httpMessage) {
    socket.destroy();
    return;
  }
  const answer =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? gatewayAnswers.headersTooLarge
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? { status: 408, message: 'Request Timeout' }
        : gatewayAnswers.badRequest;
  const body = JSON.stringify({ message: answer.message });
  socket.end(
    `HTTP/1.1 ${answer.status} ${answer.message}\r\ncontent-type: application/json\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/**
 * The body as a JSON object, or undefined once the answer is sent: 413 past `maxBytes`, 400 with
 * `shape` (what the route expects) for anything but a JSON object. For the local-only routes.
 */
export async function readJsonObject(
  request: IncomingMessage,
  response: ServerResponse,
  maxBytes: number,
  shape: string,
): Promise<Record<string, unknown> | undefined> {
  const text = (await readBody(request, maxBytes))?.toString('utf8');
  if (text === undefined) {
    sendJson(response, 413, { message: `The body is larger than ${maxBytes / 1024} KiB` });
    return undefined;
  }
  let input: unknown;
  try {
    input = text ? JSON.parse(text) : undefined;
  } catch {
    input = undefined;
  }
  if (!input || typeof input !== 'object' || Array.isArray(input)) {
    sendJson(response, 400, { message: shape });
    return undefined;
  }
  return input as Record<string, unknown>;
}
