import packageJson from '../../../package.json' with { type: 'json' };
import { openDatabase } from '../../config/databases.js';
import type { TenantConfig } from '../../config/tenants.js';
import { webApiPolicy } from '../../config/web-api.js';
import { ServiceError } from '../../core/errors.js';
import { MetricName } from '../../core/metrics.js';
import { authenticateApplication, type SignedCall, type WebApiContext } from '../../core/web-api/calls.js';
import {
  type CallResult,
  errorAnswer,
  WebApiErrorCode,
  type WebApiRequest,
} from '../../core/web-api/envelope.js';
import { type HttpRequest, type HttpResponse, httpHandler, toServiceError } from '../http.js';
import { serviceLog, serviceMetrics } from '../observability.js';
import { requireTenant } from '../tenant.js';
import { decodeRequest, encodeAnswer, encodeObject } from './codec.js';
import { type AnswerFormat, negotiateAnswerFormat, requestFormat } from './format.js';
import { tenantWebApiStore } from './store.js';

/** The Web API version that `test` reports: the package's. */
export const WEB_API_VERSION: string = packageJson.version;

/** An error on its way out, with the answer format negotiated for its request. */
class FormattedError extends ServiceError {
  constructor(
    error: ServiceError,
    readonly format: AnswerFormat,
  ) {
    super(error.status, error.code, error.message, { cause: error.cause ?? error });
  }
}

/** The `errorCode` of an error: the Web API's own codes, then the shared errors mapped onto them. */
function errorCodeOf(error: ServiceError): string {
  if (/^\d{3}$/.test(error.code)) return error.code;
  if (error.code === 'tenant_not_found') return WebApiErrorCode.unknownTenant;
  if (error.status === 503) return WebApiErrorCode.databaseUnavailable;
  return WebApiErrorCode.internal;
}

/** The Web API's error body (CONTRACT.md section 5) in the negotiated format. */
export function renderWebApiError(
  error: ServiceError,
  request: HttpRequest | undefined,
  requestId: string,
): HttpResponse {
  const format =
    error instanceof FormattedError
      ? error.format
      : negotiateAnswerFormat(request?.headers ?? {}, 'application/json');
  const message = error.expose ? error.message : 'The request could not be completed';
  const result: CallResult = { answer: errorAnswer(null, errorCodeOf(error), message), rowName: undefined };
  return {
    status: error.status,
    headers: { 'content-type': format.contentType, 'x-request-id': requestId },
    body: encodeAnswer(result, format.kind),
  };
}

/** A Web API route, once its tenant is known and its answer format negotiated. */
export type WebApiRoute = (
  request: HttpRequest,
  tenant: TenantConfig,
  format: AnswerFormat,
) => Promise<HttpResponse>;

/** Wraps a Web API route as a Lambda handler: unknown tenant 404, every error in the negotiated format. */
export function webApiHandler(route: WebApiRoute) {
  return httpHandler(async function webApiRoute(request) {
    let format = negotiateAnswerFormat(request.headers, 'application/json');
    try {
      const tenant = await requireTenant(request);
      format = negotiateAnswerFormat(request.headers, tenant.webApi.DefContentType);
      return await route(request, tenant, format);
    } catch (error) {
      throw new FormattedError(toServiceError(error), format);
    }
  }, renderWebApiError);
}

function answer(format: AnswerFormat, body: string, requestId: string): HttpResponse {
  return { status: 200, headers: { 'content-type': format.contentType, 'x-request-id': requestId }, body };
}

async function webApiContext(tenant: TenantConfig, request: HttpRequest): Promise<WebApiContext> {
  const db = await openDatabase(tenant.database);
  return {
    tenant: tenant.id,
    store: tenantWebApiStore(db),
    policy: webApiPolicy(tenant),
    requestId: request.requestId,
    log: serviceLog(),
  };
}

/** `GET …/test`: checks `x-api-key` and reports the version. */
export const testRoute: WebApiRoute = async (request, tenant, format) => {
  const { store } = await webApiContext(tenant, request);
  await authenticateApplication(store, request.headers['x-api-key']);
  return answer(
    format,
    encodeObject({ status: 'ok', version: WEB_API_VERSION }, format.kind),
    request.requestId,
  );
};

/** A signed call route (`getData`, `getDataAsync`): Content-Type first, then the use case's own checks. */
export function signedCallRoute(
  useCase: (ctx: WebApiContext, call: SignedCall) => Promise<CallResult>,
): WebApiRoute {
  return async (request, tenant, format) => {
    const bodyFormat = requestFormat(request.headers['content-type']);
    const ctx = await webApiContext(tenant, request);
    let decoded: WebApiRequest | undefined;
    let vlResult: number | undefined;
    try {
      const result = await useCase(ctx, {
        apiKey: request.headers['x-api-key'],
        signature: request.headers['x-svc-signature'],
        body: request.body,
        decode: () => {
          decoded = decodeRequest(request.body, bodyFormat);
          return decoded;
        },
      });
      vlResult = result.answer.vlResult;
      return answer(format, encodeAnswer(result, format.kind), request.requestId);
    } finally {
      // Only admitted calls (their envelope decoded) are counted. A call refused after decoding
      // (unknown vltyp, say) counts as `rejected`, so that callers cannot invent dimension values.
      if (decoded) countCall(vlResult === undefined ? 'rejected' : String(decoded.vltyp), vlResult ?? -1);
    }
  };
}

/** `WebApiCalls` by `vltyp` and `vlResult`; -2 is an async call past `CommandTimeoutAsync` (160). */
function countCall(vltyp: string, vlResult: number): void {
  const metrics = serviceMetrics();
  metrics.count({ [MetricName.webApiCalls]: 1 }, [{ vltyp, vlResult: String(vlResult) }]);
  if (vlResult === -2) metrics.count({ [MetricName.asyncTimeouts]: 1 }, [{}]);
}
