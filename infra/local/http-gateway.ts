import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { intFromEnv } from '../../shared/config/settings.js';
import { atMost } from '../../shared/core/time-limit.js';
import { noteIntegrationError, noteRequestId } from './access-log.js';
import {
  LambdaThrottledError,
  type LocalFunctionInstancesByName,
  localFunctionInstances,
} from './function-instances.js';
import { gatewayAnswers, type RequestTarget, readBody, sendBytes, sendGatewayAnswer } from './local-http.js';
import { type HttpLambda, type LambdaRoute, loadHandler } from './routes.js';

/** HTTP API's payload limit. */
const MAX_BODY_BYTES = 10 * 1024 * 1024;
/**
 * Lambda's limit for a synchronous invocation's event (6 MiB): HTTP API accepts 10 MB, but an event
 * over this (the body, base64 for binary bodies, plus headers and context) never reaches the
 * function, and the client gets 413. A binary body therefore carries at most ~4.5 MB.
 */
const LAMBDA_EVENT_MAX_BYTES = 6 * 1024 * 1024;
/** Below this many body bytes an event cannot reach Lambda's limit (base64 adds a third). */
const EVENT_SURELY_FITS_BYTES = 4 * 1024 * 1024;
/** HTTP API's integration time-out (30 s); `LOCAL_GATEWAY_TIMEOUT_MS` shortens it for tests. */
export const gatewayTimeoutMs = () => intFromEnv('LOCAL_GATEWAY_TIMEOUT_MS', 30_000, 100, 30_000);
/** How long after the gateway's limit the function's own time is up (middy aborts 5 ms before). */
const FUNCTION_GRACE_MS = 10;
const TEXT_TYPES = /^(application\/(json|xml|x-www-form-urlencoded)|text\/)/i;

interface CompiledRoute {
  readonly route: LambdaRoute;
  readonly pattern: RegExp;
  readonly names: string[];
  handler?: Promise<HttpLambda>;
}

function compile(route: LambdaRoute): CompiledRoute {
  const names: string[] = [];
  const source = route.path
    .split('/')
    .map((segment) => {
      const param = /^\{(\w+)\}$/.exec(segment);
      if (!param) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      names.push(param[1]!);
      return '([^/]+)';
    })
    .join('/');
  return { route, pattern: new RegExp(`^${source}$`), names };
}

/**
 * The methods `routes` serve at a path, for the local stack's 405 to a method no route of that path
 * serves (HTTP API itself answers such a request 404 `{"message":"Not Found"}`).
 */
export function methodsAtPath(routes: readonly LambdaRoute[]): (pathname: string) => string[] {
  const compiled = routes.map(compile);
  return (pathname) => [
    ...new Set(
      compiled.filter((target) => target.pattern.test(pathname)).map((target) => target.route.method),
    ),
  ];
}

/**
 * Emulates API Gateway HTTP API in front of the Lambda handlers: builds payload-2.0 events
 * exactly as AWS does (base64 for binary bodies, lower-case headers) and writes their results.
 * At the time limit it answers 503 as HTTP API does; the handler's context says the time is up
 * at that moment too, so its database work is cancelled (see `RequestContext.signal`).
 */
export function createHttpGateway(
  routes: readonly LambdaRoute[],
  instances: LocalFunctionInstancesByName = localFunctionInstances(),
) {
  const compiled = routes.map(compile);
  const timeoutMs = gatewayTimeoutMs();

  return async function gateway(
    request: IncomingMessage,
    response: ServerResponse,
    url: RequestTarget,
  ): Promise<boolean> {
    const method = request.method ?? 'GET';
    let match: { target: CompiledRoute; values: RegExpExecArray } | undefined;
    for (const target of compiled) {
      const values = target.pattern.exec(url.pathname);
      if (values && target.route.method === method) {
        match = { target, values };
        break;
      }
    }
    if (!match) return false;
    const { target, values } = match;

    const body = await readBody(request, MAX_BODY_BYTES);
    if (body === undefined) {
      sendGatewayAnswer(response, gatewayAnswers.tooLarge);
      return true;
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) {
      if (value !== undefined && name !== 'cookie')
        headers[name] = Array.isArray(value) ? value.join(',') : value;
    }
    // As HTTP API sets it (https there), replacing what the client sent: the scheme it was called with.
    headers['x-forwarded-proto'] =
      'encrypted' in request.socket && request.socket.encrypted ? 'https' : 'http';
    const pathParameters: Record<string, string> = {};
    try {
      target.names.forEach((name, index) => {
        pathParameters[name] = decodeURIComponent(values[index + 1]!);
      });
    } catch {
      // A malformed percent-escape (`%ZZ`): API Gateway refuses such a path before any function runs.
      sendGatewayAnswer(response, gatewayAnswers.badRequest);
      return true;
    }
    const queryStringParameters: Record<string, string> = {};
    for (const [name, value] of url.searchParams) {
      queryStringParameters[name] =
        name in queryStringParameters ? `${queryStringParameters[name]},${value}` : value;
    }
    const textual = body.length === 0 || TEXT_TYPES.test(headers['content-type'] ?? '');
    const requestId = randomUUID();
    // For the access line, which shows the id the function's answer and log lines carry.
    noteRequestId(response, requestId);
    const now = new Date();
    const event: APIGatewayProxyEventV2 = {
      version: '2.0',
      routeKey: `${method} ${target.route.path}`,
      rawPath: url.pathname,
      rawQueryString: url.rawQuery,
      headers,
      cookies: request.headers.cookie?.split(/;\s*/),
      queryStringParameters: Object.keys(queryStringParameters).length ? queryStringParameters : undefined,
      pathParameters,
      requestContext: {
        accountId: '000000000000',
        apiId: 'local',
        domainName: headers.host ?? 'localhost',
        domainPrefix: 'local',
        http: {
          method,
          path: url.pathname,
          protocol: `HTTP/${request.httpVersion}`,
          sourceIp: request.socket.remoteAddress ?? '127.0.0.1',
          userAgent: headers['user-agent'] ?? '',
        },
        requestId,
        routeKey: `${method} ${target.route.path}`,
        stage: '$default',
        time: now.toUTCString(),
        timeEpoch: now.getTime(),
      },
      body: body.length === 0 ? undefined : textual ? body.toString('utf8') : body.toString('base64'),
      isBase64Encoded: !textual,
    };
    if (
      body.length > EVENT_SURELY_FITS_BYTES &&
      Buffer.byteLength(JSON.stringify(event)) > LAMBDA_EVENT_MAX_BYTES
    ) {
      sendGatewayAnswer(response, gatewayAnswers.tooLarge);
      return true;
    }
    const deadline = Date.now() + timeoutMs;
    const context = {
      awsRequestId: requestId,
      functionName: target.route.function,
      functionVersion: '$LATEST',
      invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${target.route.function}`,
      memoryLimitInMB: '1024',
      logGroupName: `/aws/lambda/${target.route.function}`,
      logStreamName: 'local',
      callbackWaitsForEmptyEventLoop: false,
      // The function's time runs out just after the gateway's limit: the gateway answers at its
      // limit, as HTTP API does, and the function's early time-out (middy) then cancels its work.
      getRemainingTimeInMillis: () => Math.max(0, deadline + FUNCTION_GRACE_MS - Date.now()),
      done: () => undefined,
      fail: () => undefined,
      succeed: () => undefined,
    } satisfies Context;

    target.handler ??= loadHandler(target.route);
    const handler = await target.handler;
    // In an instance of the function of its own while it runs, as Lambda gives it (its pools).
    const invocation = instances.of(target.route.function).invoke(() => handler(event, context));
    // Past the limit nobody waits for the invocation; its late end must not surface anywhere.
    invocation.catch(() => undefined);
    let result: Awaited<typeof invocation> | 'timeout';
    try {
      result = await atMost(invocation, deadline - Date.now(), () => 'timeout' as const);
    } catch (error) {
      if (!(error instanceof LambdaThrottledError)) throw error;
      // Lambda refused the invocation at the function's reserved concurrency: HTTP API answers
      // its own 500, the function never ran (the access log's integrationError says why).
      noteIntegrationError(response, 'Rate Exceeded. (Lambda: reserved concurrency in use)');
      sendGatewayAnswer(response, gatewayAnswers.internal);
      return true;
    }
    // An answer ready only at or after the limit (the event loop was busy) is never delivered.
    if (result === 'timeout' || Date.now() >= deadline) {
      sendGatewayAnswer(response, gatewayAnswers.unavailable);
      return true;
    }
    const responseHeaders: Record<string, string | number | boolean | string[]> = { ...result.headers };
    if (result.cookies?.length) responseHeaders['set-cookie'] = result.cookies;
    // A text body is written as the text it is (sendBytes); a base64 one as its bytes.
    const payload = !result.body
      ? ''
      : result.isBase64Encoded
        ? Buffer.from(result.body, 'base64')
        : result.body;
    sendBytes(response, result.statusCode ?? 200, responseHeaders as Record<string, string>, payload);
    return true;
  };
}
