import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';

export interface EventOptions {
  readonly method: 'GET' | 'POST';
  /** The route as in serverless.yml, e.g. `/{tenant}/JsonAPI/File/getFile/{fileGUID}`. */
  readonly route: string;
  readonly pathParameters: Record<string, string>;
  readonly query?: string;
  readonly headers?: Record<string, string>;
  readonly body?: Buffer;
}

/** An HTTP API payload-2.0 event as API Gateway builds it: lower-case headers, binary bodies base64. */
export function httpApiEvent(options: EventOptions): APIGatewayProxyEventV2 {
  const rawPath = options.route.replace(/\{(\w+)\}/g, (_all, name: string) =>
    encodeURIComponent(options.pathParameters[name] ?? ''),
  );
  const routeKey = `${options.method} ${options.route}`;
  const headers = Object.fromEntries(
    Object.entries(options.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]),
  );
  return {
    version: '2.0',
    routeKey,
    rawPath,
    rawQueryString: options.query ?? '',
    headers,
    queryStringParameters: options.query ? Object.fromEntries(new URLSearchParams(options.query)) : undefined,
    pathParameters: options.pathParameters,
    body: options.body?.length ? options.body.toString('base64') : undefined,
    isBase64Encoded: Boolean(options.body?.length),
    requestContext: {
      accountId: '000000000000',
      apiId: 'test',
      domainName: 'test.example',
      domainPrefix: 'test',
      http: {
        method: options.method,
        path: rawPath,
        protocol: 'HTTP/1.1',
        sourceIp: '127.0.0.1',
        userAgent: 'vitest',
      },
      requestId: 'test-request',
      routeKey,
      stage: '$default',
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
    },
  };
}

export type HttpLambda = (event: APIGatewayProxyEventV2, context: Context) => Promise<unknown>;

/** Invokes a handler as Lambda would and returns its structured result. */
export async function invokeHttp(handler: HttpLambda, event: APIGatewayProxyEventV2) {
  const context = { awsRequestId: 'aws-test-request', functionName: 'test' } as Context;
  return (await handler(event, context)) as APIGatewayProxyStructuredResultV2;
}

/** The bytes of a Lambda result body. */
export function resultBytes(result: APIGatewayProxyStructuredResultV2): Buffer {
  return Buffer.from(result.body ?? '', result.isBase64Encoded ? 'base64' : 'utf8');
}

/** A multipart/form-data body exactly as fetch encodes it. */
export async function encodeForm(form: FormData): Promise<{ body: Buffer; contentType: string }> {
  const request = new Request('http://localhost/', { method: 'POST', body: form });
  return {
    body: Buffer.from(await request.arrayBuffer()),
    contentType: request.headers.get('content-type')!,
  };
}
