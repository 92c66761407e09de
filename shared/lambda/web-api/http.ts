import { openDatabase } from '../../config/databases.js';
import type { TenantConfig } from '../../config/tenants.js';
import { SERVICE_VERSION } from '../../config/version.js';
import { webApiPolicy } from '../../config/web-api.js';
import { ANSWER_STORE_UNAVAILABLE, completeAnswer } from '../../core/answers.js';
import {
  DatabaseBusyError,
  DatabasePermissionError,
  DatabaseTlsError,
  DatabaseUnavailableError,
} from '../../core/database.js';
import { ServiceError } from '../../core/errors.js';
import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENT_REPLAYED_HEADER,
  IdempotencyKeyInProgressError,
  IdempotencyKeyReusedError,
  InvalidIdempotencyKeyError,
  parseIdempotencyKey,
} from '../../core/idempotency.js';
import { MetricName } from '../../core/metrics.js';
import {
  authenticateApplication,
  type CallAnswer,
  type SignedCall,
  type WebApiContext,
} from '../../core/web-api/calls.js';
import {
  type CallResult,
  errorAnswer,
  WebApiError,
  WebApiErrorCode,
  type WebApiRequest,
} from '../../core/web-api/envelope.js';
import { databaseBusyMessage, httpHandler, isTimeLimit, type RenderedError } from '../http.js';
import { recordedAnswer, recordedResponse, tenantIdempotencyStore } from '../idempotency.js';
import { answerResponse, largeAnswerLimits } from '../large-answers.js';
import { serviceMetrics } from '../observability.js';
import type { HttpRequest, HttpResponse, TenantRequestContext } from '../request-context.js';
import { tenantRoute } from '../tenant.js';
import { TenantRateLimitedError } from '../tenant-admission.js';
import { encodeAnswer, encodeObject, requestDecoder } from './codec.js';
import { type AnswerFormat, negotiateAnswerFormat, requestFormat } from './format.js';
import { tenantWebApiStore } from './store.js';

/** The Web API version that `test` reports: the service's. */
export const WEB_API_VERSION: string = SERVICE_VERSION;

/** The HTTP status of each `errorCode` (CONTRACT.md section 5): the one mapping of Web API errors to HTTP. */
const HTTP_STATUS: Readonly<Record<WebApiErrorCode, number>> = {
  '100': 400,
  '101': 400,
  '102': 401,
  '103': 401,
  '104': 401,
  '105': 409,
  '106': 415,
  '107': 422,
  '108': 409,
  '110': 404,
  '111': 404,
  '112': 404,
  '130': 429,
  // Journaled outcomes: answered 200 with vlResult -1 (or -2), never thrown by the service itself.
  '120': 200,
  '160': 200,
  '161': 200,
  '170': 200,
  '150': 503,
  '162': 503,
  '180': 500,
  '190': 500,
};

/** The HTTP status a Web API error is answered with. */
export const webApiHttpStatus = (error: WebApiError): number => HTTP_STATUS[error.errorCode];

/**
 * Any error as a Web API error: the service's own errors met on the way (unknown tenant, database
 * unreachable) get their Web API codes; anything else is 190, whose message never reaches the client.
 */
export function toWebApiError(error: unknown): WebApiError {
  if (error instanceof WebApiError) return error;
  // CONTRACT 5a's refusals under an Idempotency-Key.
  if (error instanceof InvalidIdempotencyKeyError) {
    return new WebApiError(WebApiErrorCode.invalidEnvelope, error.message, { cause: error });
  }
  if (error instanceof IdempotencyKeyReusedError) {
    return new WebApiError(WebApiErrorCode.idempotencyKeyReused, error.message, { cause: error });
  }
  if (error instanceof IdempotencyKeyInProgressError) {
    return new WebApiError(WebApiErrorCode.idempotencyKeyInProgress, error.message, {
      cause: error,
      retryAfterSeconds: error.retryAfterSeconds,
    });
  }
  if (error instanceof ServiceError && error.code === 'tenant_not_found') {
    return new WebApiError(WebApiErrorCode.unknownTenant, error.message, { cause: error });
  }
  if (error instanceof TenantRateLimitedError) {
    return new WebApiError(WebApiErrorCode.tenantRateLimited, error.message, {
      cause: error,
      retryAfterSeconds: error.refusal.retryAfterSeconds,
      headers: error.headers,
    });
  }
  if (error instanceof ServiceError && error.code === ANSWER_STORE_UNAVAILABLE) {
    // An outage like the database's (503/150), but the message must not blame the database.
    return new WebApiError(
      WebApiErrorCode.databaseUnavailable,
      'The answer is too large to send inline and the answer store is not reachable; try again later',
      { cause: error },
    );
  }
  // 150 as for any database that cannot be used, in words that say every connection was busy, and
  // with how long to wait before trying again.
  if (error instanceof DatabaseBusyError) {
    return new WebApiError(WebApiErrorCode.databaseUnavailable, databaseBusyMessage(error), {
      cause: error,
      retryAfterSeconds: error.retryAfterSeconds,
    });
  }
  // 150 as for any database that cannot be used, in words that say it was the TLS handshake
  // (the adapter's own, with no host or connection string in them).
  if (error instanceof DatabaseTlsError) {
    return new WebApiError(WebApiErrorCode.databaseUnavailable, error.message, { cause: error });
  }
  if (error instanceof DatabaseUnavailableError || (error instanceof ServiceError && error.status === 503)) {
    return new WebApiError(
      WebApiErrorCode.databaseUnavailable,
      'The database is not reachable; try again later',
      { cause: error },
    );
  }
  // The adapter's words: the object and what to grant on it (CONTRACT.md section 7).
  if (error instanceof DatabasePermissionError) {
    return new WebApiError(WebApiErrorCode.databasePermissionDenied, error.message, { cause: error });
  }
  // The invocation's time ran out (the gateway's 30 s): a time-out, as the Data API says 503
  // time_limit_exceeded, not "anything unexpected".
  if (isTimeLimit(error)) {
    return new WebApiError(
      WebApiErrorCode.gatewayTimeLimit,
      'The request did not finish within the time limit of the gateway; use getDataAsync for long operations',
      { cause: error },
    );
  }
  return new WebApiError(WebApiErrorCode.internal, 'The request could not be completed', { cause: error });
}

/** An error on its way out, with the answer format negotiated for its request. */
class FormattedError extends Error {
  override readonly name = 'FormattedError';
  constructor(
    readonly error: WebApiError,
    readonly format: AnswerFormat,
  ) {
    super(error.message, { cause: error });
  }
}

/** The Web API's error body (CONTRACT.md section 5) in the negotiated format. */
export function renderWebApiError(
  thrown: unknown,
  request: HttpRequest | undefined,
  requestId: string,
): RenderedError {
  const format =
    thrown instanceof FormattedError
      ? thrown.format
      : negotiateAnswerFormat(request?.headers ?? {}, 'application/json');
  const error = toWebApiError(thrown instanceof FormattedError ? thrown.error : thrown);
  const result: CallResult = {
    answer: errorAnswer(error.journalId, error.errorCode, error.message),
    rowName: undefined,
  };
  return {
    code: error.errorCode,
    response: {
      status: webApiHttpStatus(error),
      headers: {
        'content-type': format.contentType,
        'x-request-id': requestId,
        ...error.headers,
        ...(error.retryAfterSeconds !== undefined && { 'retry-after': String(error.retryAfterSeconds) }),
      },
      body: encodeAnswer(result, format.kind),
    },
  };
}

/** A Web API route, once its tenant is known and its answer format negotiated. */
export type WebApiRoute = (ctx: TenantRequestContext, format: AnswerFormat) => Promise<HttpResponse>;

/**
 * Wraps a Web API route as a Lambda handler: unknown tenant 404, every error in the negotiated
 * format (by the tenant's `DefContentType` once it is known, JSON before: `renderWebApiError`).
 */
export function webApiHandler(route: WebApiRoute) {
  return httpHandler(
    tenantRoute(async function webApiRoute(ctx) {
      const format = negotiateAnswerFormat(ctx.request.headers, ctx.tenant.webApi.DefContentType);
      try {
        return await route(ctx, format);
      } catch (error) {
        const refusal = toWebApiError(error);
        if (refusal.journalId !== null) ctx.journalId = refusal.journalId;
        throw new FormattedError(refusal, format);
      }
    }),
    renderWebApiError,
  );
}

function answer(format: AnswerFormat, body: string, requestId: string): HttpResponse {
  return { status: 200, headers: { 'content-type': format.contentType, 'x-request-id': requestId }, body };
}

/** Where the Web API's large answers go: apart from the Data API's, so that IAM can tell them apart. */
const webApiAnswerPrefix = (tenant: TenantConfig) => `answers/${tenant.id}/web-api`;

/** A call's answer encoded in the negotiated format: inline, or, too large for a Lambda response, written to S3. */
function deliveredAnswer(result: CallResult, tenant: TenantConfig, format: AnswerFormat) {
  return completeAnswer(
    largeAnswerLimits(webApiAnswerPrefix(tenant)),
    encodeAnswer(result, format.kind),
    format.contentType,
    format.kind,
  );
}

/**
 * A call's answer as it leaves: inline, or, too large for a Lambda response, written to S3 in the
 * negotiated format and answered 303 to a presigned URL (CONTRACT.md section 5), as the Data API
 * does. The call is journaled already, whole, so 997 can give the answer again after the URL
 * expired. Under an `Idempotency-Key` the answer was made and recorded with the call's effects
 * (CONTRACT 5a), and leaves as recorded; a retry that ran nothing says so.
 */
async function callAnswer(
  answer: CallAnswer,
  tenant: TenantConfig,
  format: AnswerFormat,
  requestId: string,
): Promise<HttpResponse> {
  const headers = { 'x-request-id': requestId };
  if (answer.recorded) return recordedResponse(answer.recorded, answer.replayed, headers);
  const result = answer.result!;
  try {
    const delivered = await deliveredAnswer(result, tenant, format);
    const response = answerResponse(delivered, { 'content-type': format.contentType, ...headers });
    if (!answer.replayed) return response;
    return { ...response, headers: { ...response.headers, [IDEMPOTENT_REPLAYED_HEADER]: 'true' } };
  } catch (error) {
    const refusal = toWebApiError(error);
    // The error body names the journal row, whose answer 997 returns once the store is back.
    throw new WebApiError(refusal.errorCode, refusal.message, {
      cause: error,
      journalId: result.answer.id,
      retryAfterSeconds: refusal.retryAfterSeconds,
    });
  }
}

async function webApiContext(
  { tenant, request, log, trace }: TenantRequestContext,
  format?: AnswerFormat,
): Promise<WebApiContext> {
  const db = await openDatabase(tenant.database, trace);
  const header = request.headers[IDEMPOTENCY_KEY_HEADER];
  return {
    tenant: tenant.id,
    store: tenantWebApiStore(db, tenant),
    keys: tenantIdempotencyStore(db, tenant),
    idempotency:
      header === undefined || !format
        ? undefined
        : {
            header,
            retentionHours: tenant.idempotencyRetentionHours,
            recordAnswer: async (result) =>
              recordedAnswer(await deliveredAnswer(result, tenant, format), format.contentType),
          },
    policy: webApiPolicy(tenant),
    requestId: request.requestId,
    trace,
    log,
    arrivedAt: request.arrivedAt,
  };
}

/** `GET …/test`: checks `x-api-key` and reports the version. */
export const testRoute: WebApiRoute = async (ctx, format) => {
  const { store } = await webApiContext(ctx);
  await authenticateApplication(store, ctx.request.headers['x-api-key']);
  return answer(format, encodeObject({ status: 'ok', version: WEB_API_VERSION }, format.kind), ctx.requestId);
};

/**
 * A signed call route (`getData`, `getDataAsync`): Content-Type first, then the form of an
 * `Idempotency-Key` (400/100: nothing is recorded for a refused call), then the use case's own checks.
 */
export function signedCallRoute(
  useCase: (ctx: WebApiContext, call: SignedCall) => Promise<CallAnswer>,
): WebApiRoute {
  return async (ctx, format) => {
    const { tenant, request } = ctx;
    const bodyFormat = requestFormat(request.headers['content-type']);
    ctx.idempotencyKey = parseIdempotencyKey(request.headers[IDEMPOTENCY_KEY_HEADER]);
    const decode = await requestDecoder(bodyFormat);
    const calls = await webApiContext(ctx, format);
    let decoded: WebApiRequest | undefined;
    let vlResult: number | undefined;
    try {
      const answer = await useCase(calls, {
        apiKey: request.headers['x-api-key'],
        signature: request.headers['x-svc-signature'],
        body: request.body,
        decode: () => {
          decoded = decode(request.body);
          return decoded;
        },
      });
      // A replay of a recorded answer ran nothing: it is not counted as a call.
      if (answer.replayed && !answer.result) decoded = undefined;
      else vlResult = answer.result?.answer.vlResult;
      // The request's summary line then joins the journal row to the trace (CONTRACT 8a): WS_JOURNAL
      // is the ERP's, so no column of it holds the trace id.
      if (typeof answer.result?.answer.id === 'number') ctx.journalId = answer.result.answer.id;
      return await callAnswer(answer, tenant, format, request.requestId);
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
