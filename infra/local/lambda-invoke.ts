import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import { describeError } from '../../shared/core/log.js';
import { parseTraceparent, TRACEPARENT, TRACESTATE } from '../../shared/core/trace-context.js';
import { serviceLog } from '../../shared/lambda/observability.js';
import { LambdaThrottledError, type LocalFunctionInstancesByName } from './function-instances.js';
import { type LocalRoute, readBody, sendBytes, sendJson, traceHeadersOf } from './local-http.js';
import { importHandler } from './routes.js';
import { readServerlessConfig, type ServerlessConfig } from './serverless-config.js';

/** Lambda's limit for a synchronous invocation's payload. */
const MAX_PAYLOAD_BYTES = 6 * 1024 * 1024;
const INVOKE_PATH = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/;

type InvokedLambda = (event: unknown, context: Context) => Promise<unknown>;

/** The functions of serverless.yml without an HTTP event, by name: the ones the Invoke API serves locally. */
export function invocableFunctions(config: ServerlessConfig = readServerlessConfig()): Map<string, string> {
  return new Map(
    Object.entries(config.functions)
      .filter(([, fn]) => !(fn.events ?? []).some((event) => event.httpApi))
      .map(([name, fn]) => [name, fn.handler]),
  );
}

/** `webhookAdmin`, its ARN or `…:function:webhookAdmin:$LATEST` as Lambda accepts them. */
function functionNameOf(text: string): string {
  const arn = /^arn:[^:]+:lambda:[^:]*:[^:]*:function:([^:]+)(:[^:]+)?$/.exec(text);
  return arn ? arn[1]! : (text.split(':')[0] ?? text);
}

/** What Lambda takes in `X-Amz-Client-Context` (the SDK's `ClientContext`): base64 of a JSON object. */
function clientContextOf(
  header: string | string[] | undefined,
): Record<string, unknown> | undefined | 'invalid' {
  if (header === undefined) return undefined;
  const text = Array.isArray(header) ? header.join(',') : header;
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return 'invalid';
  try {
    const parsed: unknown = JSON.parse(Buffer.from(text, 'base64').toString('utf8'));
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : 'invalid';
  } catch {
    return 'invalid';
  }
}

const hasTraceparent = (custom: unknown) =>
  Boolean(custom && typeof custom === 'object' && TRACEPARENT in (custom as Record<string, unknown>));

/**
 * The client context the function gets (CONTRACT 8a): the caller's own, as Lambda passes it; and
 * where it brings no `traceparent` (in `Custom`, as OpenTelemetry's AWS SDK instrumentation puts
 * it, or `custom`), the span this stack answered the invoke with (stack.ts: a child of the caller's
 * `traceparent` header, or a new trace) and the caller's `tracestate`, in `Custom`, as such an
 * instrumented caller would have put its own: so that the function continues the caller's trace
 * (shared/lambda/tracing.ts `invokerTrace`), and the access line and the function's lines share it.
 */
function invokeClientContext(
  given: Record<string, unknown> | undefined,
  stackSpan: string | undefined,
  incoming: { traceparent?: string; tracestate?: string },
): Record<string, unknown> | undefined {
  if (hasTraceparent(given?.Custom) || hasTraceparent(given?.custom) || !stackSpan) return given;
  const custom =
    given?.Custom && typeof given.Custom === 'object' ? (given.Custom as Record<string, unknown>) : {};
  const tracestate =
    incoming.tracestate && parseTraceparent(incoming.traceparent)
      ? { [TRACESTATE]: incoming.tracestate }
      : {};
  return { ...given, Custom: { ...custom, [TRACEPARENT]: stackSpan, ...tracestate } };
}

/**
 * The Lambda Invoke API (`POST /2015-03-31/functions/{name}/invocations`) for every function that
 * has no HTTP event (CONTRACT.md section 3), answered as AWS answers it, so that `aws lambda invoke
 * --endpoint-url` and the SDK's LambdaClient work unchanged: 200 with the result as JSON; a
 * function that throws: 200 with `X-Amz-Function-Error: Unhandled` and `{errorType, errorMessage}`;
 * `X-Amz-Invocation-Type: Event`: 202 at once; `DryRun`: 204; unknown function: 404
 * ResourceNotFoundException.
 */
export function lambdaInvokeRoute(instances: LocalFunctionInstancesByName): {
  match: (method: string | undefined, pathname: string) => LocalRoute | undefined;
} {
  const functions = invocableFunctions();
  const handlers = new Map<string, Promise<InvokedLambda>>();

  const invoke =
    (requested: string): LocalRoute =>
    async (request, response) => {
      const name = functionNameOf(requested);
      const handler = functions.get(name);
      if (!handler) {
        const arn = `arn:aws:lambda:local:000000000000:function:${name}`;
        return sendJson(
          response,
          404,
          { Type: 'User', message: `Function not found: ${arn}` },
          { 'x-amzn-errortype': 'ResourceNotFoundException' },
        );
      }
      const body = await readBody(request, MAX_PAYLOAD_BYTES);
      if (body === undefined) {
        return sendJson(
          response,
          413,
          {
            Type: 'User',
            message: `Request must be smaller than ${MAX_PAYLOAD_BYTES} bytes for the InvokeFunction operation`,
          },
          { 'x-amzn-errortype': 'RequestTooLargeException' },
        );
      }
      let event: unknown;
      try {
        event = body.length === 0 ? {} : JSON.parse(body.toString('utf8'));
      } catch {
        return sendJson(
          response,
          400,
          { Type: 'User', message: 'Could not parse request body into json' },
          { 'x-amzn-errortype': 'InvalidRequestContentException' },
        );
      }
      const givenContext = clientContextOf(request.headers['x-amz-client-context']);
      if (givenContext === 'invalid') {
        return sendJson(
          response,
          400,
          { Type: 'User', message: 'Client context must be a valid Base64-encoded JSON object.' },
          { 'x-amzn-errortype': 'InvalidRequestContentException' },
        );
      }
      const stackSpan = response.getHeader(TRACEPARENT);
      const clientContext = invokeClientContext(
        givenContext,
        typeof stackSpan === 'string' ? stackSpan : undefined,
        traceHeadersOf(request),
      );
      const invocationType = String(request.headers['x-amz-invocation-type'] ?? 'RequestResponse');
      if (invocationType === 'DryRun') return sendBytes(response, 204, {}, Buffer.alloc(0));
      const requestId = randomUUID();
      const context = {
        awsRequestId: requestId,
        functionName: name,
        functionVersion: '$LATEST',
        invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${name}`,
        memoryLimitInMB: '1024',
        logGroupName: `/aws/lambda/${name}`,
        logStreamName: 'local',
        callbackWaitsForEmptyEventLoop: false,
        // As Lambda's Node.js runtime gives it: the invoke's client context, parsed.
        ...(clientContext ? { clientContext: clientContext as unknown as Context['clientContext'] } : {}),
        getRemainingTimeInMillis: () => 120_000,
        done: () => undefined,
        fail: () => undefined,
        succeed: () => undefined,
      } satisfies Context;
      let loaded = handlers.get(name);
      if (!loaded) {
        loaded = importHandler<InvokedLambda>(handler);
        handlers.set(name, loaded);
      }
      // An asynchronous invocation waits for a free instance, as Lambda's queue for it does; a
      // synchronous one beyond the reserved concurrency is refused (429 TooManyRequestsException).
      const whenThrottled = invocationType === 'Event' ? 'wait' : 'refuse';
      const run = loaded.then((fn) => instances.of(name).invoke(() => fn(event, context), { whenThrottled }));
      const headers = { 'x-amzn-requestid': requestId, 'x-amz-executed-version': '$LATEST' };
      if (invocationType === 'Event') {
        run.catch((error: unknown) =>
          serviceLog().error('asynchronous invocation failed', { function: name, ...describeError(error) }),
        );
        return sendBytes(response, 202, headers, Buffer.alloc(0));
      }
      try {
        const result = await run;
        const payload = Buffer.from(result === undefined ? 'null' : JSON.stringify(result));
        sendBytes(response, 200, { ...headers, 'content-type': 'application/json' }, payload);
      } catch (error) {
        if (error instanceof LambdaThrottledError) {
          return sendBytes(
            response,
            429,
            {
              ...headers,
              'content-type': 'application/json',
              'x-amzn-errortype': 'TooManyRequestsException',
            },
            Buffer.from(
              JSON.stringify({
                Reason: 'ReservedFunctionConcurrentInvocationLimitExceeded',
                Type: 'User',
                message: 'Rate Exceeded.',
              }),
            ),
          );
        }
        // As Lambda: the error's type and message, no stack.
        const failure = {
          errorType: (error as Error)?.name ?? 'Error',
          errorMessage: (error as Error)?.message ?? String(error),
        };
        sendBytes(
          response,
          200,
          { ...headers, 'content-type': 'application/json', 'x-amz-function-error': 'Unhandled' },
          Buffer.from(JSON.stringify(failure)),
        );
      }
    };

  return {
    match(method, pathname) {
      if (method !== 'POST') return undefined;
      const found = INVOKE_PATH.exec(pathname);
      if (!found) return undefined;
      let name: string;
      try {
        name = decodeURIComponent(found[1]!);
      } catch {
        return undefined;
      }
      return invoke(name);
    },
  };
}
