import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { readBody } from './local-routes.js';
import { type HttpLambda, type LambdaRoute, loadHandler } from './routes.js';

/** HTTP API's payload limit. */
const MAX_BODY_BYTES = 10 * 1024 * 1024;
/** HTTP API's integration time-out. */
const TIMEOUT_MS = 30_000;
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

function send(response: ServerResponse, status: number, body: string, type = 'application/json'): void {
  response.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  response.end(body);
}

/**
 * Emulates API Gateway HTTP API in front of the Lambda handlers: builds payload-2.0 events
 * exactly as AWS does (base64 for binary bodies, lower-case headers) and writes their results.
 */
export function createHttpGateway(routes: readonly LambdaRoute[]) {
  const compiled = routes.map(compile);

  return async function gateway(request: IncomingMessage, response: ServerResponse): Promise<boolean> {
    const url = new URL(request.url ?? '/', 'http://localhost');
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
      send(response, 413, JSON.stringify({ message: 'Request Entity Too Large' }));
      return true;
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) {
      if (value !== undefined && name !== 'cookie')
        headers[name] = Array.isArray(value) ? value.join(',') : value;
    }
    const pathParameters: Record<string, string> = {};
    try {
      target.names.forEach((name, index) => {
        pathParameters[name] = decodeURIComponent(values[index + 1]!);
      });
    } catch {
      // A malformed percent-escape (`%ZZ`): API Gateway refuses such a path before any function runs.
      send(response, 400, JSON.stringify({ message: 'Bad Request' }));
      return true;
    }
    const queryStringParameters: Record<string, string> = {};
    for (const [name, value] of url.searchParams) {
      queryStringParameters[name] =
        name in queryStringParameters ? `${queryStringParameters[name]},${value}` : value;
    }
    const textual = body.length === 0 || TEXT_TYPES.test(headers['content-type'] ?? '');
    const requestId = randomUUID();
    const now = new Date();
    const event: APIGatewayProxyEventV2 = {
      version: '2.0',
      routeKey: `${method} ${target.route.path}`,
      rawPath: url.pathname,
      rawQueryString: url.search.slice(1),
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
    const deadline = Date.now() + TIMEOUT_MS;
    const context = {
      awsRequestId: requestId,
      functionName: target.route.function,
      functionVersion: '$LATEST',
      invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${target.route.function}`,
      memoryLimitInMB: '1024',
      logGroupName: `/aws/lambda/${target.route.function}`,
      logStreamName: 'local',
      callbackWaitsForEmptyEventLoop: false,
      getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
      done: () => undefined,
      fail: () => undefined,
      succeed: () => undefined,
    } satisfies Context;

    target.handler ??= loadHandler(target.route);
    const handler = await target.handler;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), TIMEOUT_MS);
    });
    const result = await Promise.race([handler(event, context), timeout]).finally(() => clearTimeout(timer));
    if (result === 'timeout') {
      send(response, 503, JSON.stringify({ message: 'Service Unavailable' }));
      return true;
    }
    const responseHeaders: Record<string, string | number | boolean | string[]> = { ...result.headers };
    if (result.cookies?.length) responseHeaders['set-cookie'] = result.cookies;
    const payload = result.body
      ? Buffer.from(result.body, result.isBase64Encoded ? 'base64' : 'utf8')
      : Buffer.alloc(0);
    responseHeaders['content-length'] = payload.length;
    response.writeHead(result.statusCode ?? 200, responseHeaders as Record<string, string>);
    response.end(payload);
    return true;
  };
}
