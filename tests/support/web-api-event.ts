import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { httpApiEvent } from './http-api-event.js';
import { type SignOptions, signedCall } from './web-api.js';

/** The HTTP API event of a signed `POST /{tenant}/WebAPI/{call}` (tenant `demo` unless told). */
export function signedWebApiEvent(
  call: 'getData' | 'getDataAsync',
  body: string,
  options: SignOptions & { tenant?: string } = {},
): APIGatewayProxyEventV2 {
  const signed = signedCall(body, options);
  return httpApiEvent({
    method: 'POST',
    route: `/{tenant}/WebAPI/${call}`,
    pathParameters: { tenant: options.tenant ?? 'demo' },
    headers: signed.headers,
    body: signed.body,
  });
}
