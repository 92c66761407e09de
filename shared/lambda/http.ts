import { isUtf8 } from 'node:buffer';
import middy from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { jsonStringLength } from '../core/answers.js';
import {
  DatabaseBusyError,
  DatabasePermissionError,
  DatabaseTlsError,
  DatabaseUnavailableError,
  StatementCancelledError,
} from '../core/database.js';
import { ServiceError } from '../core/errors.js';
import {
  IdempotencyKeyInProgressError,
  IdempotencyKeyReusedError,
  InvalidIdempotencyKeyError,
} from '../core/idempotency.js';
import { describeError } from '../core/log.js';
import { MetricName } from '../core/metrics.js';
import { TRACEPARENT } from '../core/trace-context.js';
import { recording, recordSpan, spanClock } from '../core/tracing.js';
import { afterAnswer, answerReturned } from './after-answer.js';
import { logFormatFromEnv, reportPermissionDenied, serviceMetrics, statusClass } from './observability.js';
import { type HttpRequest, type HttpResponse, RequestContext } from './request-context.js';
import { flushSpans, startTracing } from './tracing.js';

/** The request and the answer of every route (request-context.ts), as this edge decodes and encodes them. */
export type { HttpRequest, HttpResponse };

/** A route: what answers a request, given its context. */
export type Route = (ctx: RequestContext) => Promise<HttpResponse>;
/** An error's answer, and the machine code it carries (for the request's log lines). */
export interface RenderedError {
  readonly response: HttpResponse;
  readonly code: string;
}

/** Turns whatever a route threw into its API's error answer; anything unexpected becomes a plain 500. */
export type ErrorRenderer = (
  error: unknown,
  request: HttpRequest | undefined,
  requestId: string,
) => RenderedError;

/** The gateway's time stamp, bounded by this clock: a skewed one neither stretches nor swallows a wait. */
function arrivalOf(timeEpoch: number | undefined): number {
  const now = Date.now();
  if (typeof timeEpoch !== 'number' || !Number.isFinite(timeEpoch)) return now;
  return Math.min(now, Math.max(now - GATEWAY_TIMEOUT_MS, timeEpoch));
}

/** HTTP API's integration time-out, which no request outlives. */
const GATEWAY_TIMEOUT_MS = 30_000;

/** Decodes an API Gateway HTTP API (payload 2.0) event. */
export function toHttpRequest(event: APIGatewayProxyEventV2, context?: Context): HttpRequest {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(event.headers ?? {})) {
    if (value !== undefined) headers[name.toLowerCase()] = value;
  }
  if (event.cookies?.length) headers.cookie = event.cookies.join('; ');
  const rawBody = event.body ?? '';
  return {
    method: event.requestContext?.http?.method ?? 'GET',
    path: event.rawPath ?? event.requestContext?.http?.path ?? '/',
    params: event.pathParameters ?? {},
    query: new URLSearchParams(event.rawQueryString ?? ''),
    headers,
    body: event.isBase64Encoded ? Buffer.from(rawBody, 'base64') : Buffer.from(rawBody, 'utf8'),
    requestId: context?.awsRequestId ?? event.requestContext?.requestId ?? 'local',
    arrivedAt: arrivalOf(event.requestContext?.timeEpoch),
  };
}

/** The request's time ran out: middy's early time-out, or a statement the time-out cancelled. */
export function isTimeLimit(error: unknown): boolean {
  return error instanceof StatementCancelledError || isInvocationTimeout(error);
}

/** middy's early time-out: the invocation is about to run out of time (`@middy/core`). */
function isInvocationTimeout(error: unknown): boolean {
  return (
    error instanceof Error &&
    error.name === 'TimeoutError' &&
    (error.cause as { package?: unknown } | undefined)?.package === '@middy/core'
  );
}

const TEXTUAL = /^(application\/(json|xml|problem\+json)|text\/)/i;

/**
 * The largest body a Lambda response can carry: the 6 MB payload limit applies to the response as
 * JSON, so this is the body's size once written as a JSON string, with room left for the headers.
 */
export const MAX_RESPONSE_BODY_BYTES = 6 * 1024 * 1024 - 64 * 1024;

/**
 * Encodes a response; binary bodies go base64 as HTTP API requires. A textual body that is not
 * valid UTF-8 (a stored text/plain file in windows-1250, say) goes base64 too, or its bytes would change,
 * and so does one that JSON escaping (quotes, control characters) would make larger than base64.
 */
export function toLambdaResult(response: HttpResponse): APIGatewayProxyStructuredResultV2 {
  const headers = { ...response.headers };
  const body = response.body ?? '';
  if (typeof body === 'string') return { statusCode: response.status, headers, body, isBase64Encoded: false };
  if (TEXTUAL.test(headers['content-type'] ?? '') && isUtf8(body)) {
    if (jsonStringLength(body) <= base64Length(body.length)) {
      return { statusCode: response.status, headers, body: body.toString('utf8'), isBase64Encoded: false };
    }
  }
  return { statusCode: response.status, headers, body: body.toString('base64'), isBase64Encoded: true };
}

const base64Length = (bytes: number) => Math.ceil(bytes / 3) * 4;

/**
 * Every answer of every route, error or not, names its request (CONTRACT.md section 4:
 * `x-request-id`) and the service's span for it (CONTRACT 8a: `traceparent`), so that an
 * integrator can quote either.
 */
function withRequestIds(response: HttpResponse, ctx: RequestContext): HttpResponse {
  return {
    ...response,
    headers: { ...response.headers, 'x-request-id': ctx.requestId, [TRACEPARENT]: ctx.trace.traceparent },
  };
}

/** The words of a 503 for a full pool, the Data API's and the Web API's. */
export function databaseBusyMessage(error: DatabaseBusyError): string {
  return `The tenant database's connections are all in use; try again in ${error.retryAfterSeconds} s`;
}

/** Anything that is not a ServiceError becomes one; internals stay in the log. */
export function toServiceError(error: unknown): ServiceError {
  if (error instanceof ServiceError) return error;
  // CONTRACT 5a's refusals under an Idempotency-Key, in the Data API's codes.
  if (error instanceof InvalidIdempotencyKeyError) {
    return new ServiceError(400, 'invalid_idempotency_key', error.message, { cause: error });
  }
  if (error instanceof IdempotencyKeyReusedError) {
    return new ServiceError(422, 'idempotency_key_reused', error.message, { cause: error });
  }
  if (error instanceof IdempotencyKeyInProgressError) {
    return new ServiceError(409, 'idempotency_key_in_progress', error.message, {
      cause: error,
      headers: { 'retry-after': String(error.retryAfterSeconds) },
    });
  }
  // The database answers, but every connection this instance may hold stayed busy for the whole
  // acquire time-out: not unreachable, and trying again shortly is the remedy.
  if (error instanceof DatabaseBusyError) {
    return new ServiceError(503, 'database_busy', databaseBusyMessage(error), {
      cause: error,
      headers: { 'retry-after': String(error.retryAfterSeconds) },
    });
  }
  // Its message is the adapter's own words for what failed (no host, no connection string); a
  // wrong CA or name does not mend itself, so no "try again later".
  if (error instanceof DatabaseTlsError) {
    return new ServiceError(503, 'database_tls_failed', error.message, { cause: error });
  }
  if (error instanceof DatabaseUnavailableError) {
    return new ServiceError(503, 'database_unavailable', 'The database is not reachable; try again later', {
      cause: error,
    });
  }
  // The adapter's words: the object and what to grant on it (CONTRACT.md section 7).
  if (error instanceof DatabasePermissionError) {
    return new ServiceError(500, 'database_permission_denied', error.message, { cause: error, expose: true });
  }
  if (isTimeLimit(error)) {
    return new ServiceError(503, 'time_limit_exceeded', 'The request did not finish within its time limit', {
      cause: error,
    });
  }
  return new ServiceError(500, 'internal_error', 'The request could not be completed', { cause: error });
}

/** `response` with the tenant's `RateLimit-Policy` (when counted), unless it carries one already. */
function withRateLimitPolicy(response: HttpResponse, policy: string | undefined): HttpResponse {
  if (!policy || response.headers?.['ratelimit-policy']) return response;
  return { ...response, headers: { ...response.headers, 'ratelimit-policy': policy } };
}

/** The innermost cause of an error: what the log needs, whatever wrapped it on the way out. */
function rootCause(error: unknown): unknown {
  let root = error;
  while (root instanceof Error && root.cause instanceof Error) root = root.cause;
  return root;
}

type Event = APIGatewayProxyEventV2;
type Result = APIGatewayProxyStructuredResultV2;

/** Middleware: the one place where errors become HTTP answers. */
export function serviceErrors(renderError: ErrorRenderer): middy.MiddlewareObj<RequestContext, Result> {
  return {
    onError: async function renderServiceError(handlerRequest) {
      const ctx = handlerRequest.event;
      const { requestId, event } = ctx;
      const { response, code } = renderError(handlerRequest.error, ctx.request, requestId);
      ctx.errorCode = code;
      reportPermissionDenied(
        handlerRequest.error,
        { requestId, tenant: event?.pathParameters?.tenant, route: event?.routeKey },
        ctx.log,
      );
      if (response.status >= 500) {
        // The cause stays here; the answer says only that the request could not be completed.
        ctx.log.error('request failed', {
          requestId,
          status: response.status,
          code,
          ...describeError(rootCause(handlerRequest.error)),
        });
      }
      handlerRequest.response = toLambdaResult(
        withRateLimitPolicy(withRequestIds(response, ctx), ctx.rateLimitPolicy),
      );
    },
  };
}

/**
 * Middleware: one summary line and one metrics document per request (route, tenant, status,
 * duration, cold start). Registered before `serviceErrors`, so that it sees the rendered error.
 */
export function requestSummary(): middy.MiddlewareObj<RequestContext, Result> {
  // A bad LOG_FORMAT fails the cold start, by name, not the first request.
  logFormatFromEnv();
  let coldStart = true;
  function summarise(handlerRequest: middy.Request<RequestContext, Result>) {
    const ctx = handlerRequest.event;
    const event = ctx.event;
    const status = handlerRequest.response?.statusCode ?? 500;
    const route = event?.routeKey ?? 'unknown';
    const functionName = handlerRequest.context?.functionName ?? 'unknown';
    // Headers and the answer's (a 303's presigned location, say) go through the log's redaction.
    ctx.log.debug('request detail', {
      requestId: handlerRequest.context?.awsRequestId,
      query: event?.rawQueryString,
      headers: event?.headers,
      responseHeaders: handlerRequest.response?.headers,
    });
    ctx.log.info('request', {
      method: event?.requestContext?.http?.method,
      path: event?.rawPath,
      status,
      durationMs: Math.round(performance.now() - ctx.startedAt),
      requestId: handlerRequest.context?.awsRequestId ?? event?.requestContext?.requestId,
      tenant: event?.pathParameters?.tenant,
      route,
      function: functionName,
      coldStart,
      ...(ctx.errorCode ? { errorCode: ctx.errorCode } : {}),
      // With the line's trace id: a journal row's trace, and a trace's journal row (docs/operations.md).
      ...(ctx.journalId !== undefined ? { journalId: ctx.journalId } : {}),
    });
    coldStart = false;
    serviceMetrics().count({ [MetricName.requests]: 1, [MetricName.serverErrors]: status >= 500 ? 1 : 0 }, [
      { function: functionName },
      { route, statusClass: statusClass(status) },
    ]);
  }
  return {
    after: async function summariseAnswer(handlerRequest) {
      summarise(handlerRequest);
    },
    onError: async function summariseError(handlerRequest) {
      summarise(handlerRequest);
    },
  };
}

/**
 * Wraps a route as a Lambda handler for HTTP API events: the request's context is made here, and
 * the route, the error answer and the summary line are given it as a value. What the route took
 * for the request (its tenant's slot, tenant.ts) it gives back once the answer has left.
 */
export function httpHandler(route: Route, renderError: ErrorRenderer) {
  const handler = middy<RequestContext, Result>()
    .use(requestSummary())
    .use(serviceErrors(renderError))
    .handler(async function handleHttp(ctx, _context, { signal }) {
      ctx.cancelWith(signal);
      const response = withRequestIds(await route(ctx), ctx);
      return toLambdaResult(withRateLimitPolicy(response, ctx.rateLimitPolicy));
    });
  return async function answerThenWorkAfter(event: Event, context: Context): Promise<Result> {
    // The SDK comes in on the first event when tracing is on (tracing.ts); then, and always with it
    // off, this is an already resolved promise.
    await startTracing();
    const startedAt = performance.now();
    const ctx = new RequestContext(event, toHttpRequest(event, context), {
      startedAt,
      deadline: context?.getRemainingTimeInMillis
        ? Date.now() + context.getRemainingTimeInMillis()
        : undefined,
    });
    let result: Result | undefined;
    try {
      result = await handler(ctx, context);
      return result;
    } finally {
      if (recording(ctx.trace)) {
        recordRequestSpan(ctx, result);
        // Sent after the answer where the host allows it (the local stack, Lambda's extension),
        // else before it: either way before the invocation ends, never left in a frozen instance.
        await afterAnswer(ctx.requestId, flushSpans);
      }
      if (context?.awsRequestId) answerReturned(context.awsRequestId);
    }
  };
}

/**
 * The request's server span (CONTRACT 8a), its ids those of the answer's `traceparent`: the route
 * as the gateway names it (`GET /{tenant}/JsonAPI/...`), never the path with its values or the
 * query; the status, and the error's code.
 */
function recordRequestSpan(ctx: RequestContext, result: Result | undefined): void {
  const status = result?.statusCode ?? 500;
  const route = ctx.event?.routeKey;
  recordSpan({
    name: route && route !== '$default' ? route : ctx.request.method,
    kind: 'server',
    context: ctx.trace,
    startTime: performance.timeOrigin + ctx.startedAt,
    endTime: spanClock(),
    attributes: {
      'http.request.method': ctx.request.method,
      'http.response.status_code': status,
      ...(route ? { 'http.route': route } : {}),
      ...(ctx.tenant ? { tenant: ctx.tenant.id } : {}),
      ...(ctx.errorCode ? { 'error.type': ctx.errorCode } : {}),
    },
    failed: status >= 500,
  });
}
