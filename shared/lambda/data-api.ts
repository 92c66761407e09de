import { createEmbeddedDataSourceReader } from '../adapters/embedded-sql/data-source-reader.js';
import { createMssqlDataSourceReader } from '../adapters/mssql/data-source-reader.js';
import { byDialect, openDatabase } from '../config/databases.js';
import { getSettings } from '../config/settings.js';
import type { TenantConfig } from '../config/tenants.js';
import type { Answer, AnswerLimits } from '../core/answers.js';
import type { ConditionTranslator } from '../core/condition/index.js';
import type { DataApiContext } from '../core/data-api/read.js';
import { cancelledBy, type SqlDialectName } from '../core/database.js';
import { badRequest } from '../core/errors.js';
import { requireBasicAuth } from './basic-auth.js';
import { type HttpRequest, httpHandler, type RenderedError, toServiceError } from './http.js';
import { answerResponse, largeAnswerLimits } from './large-answers.js';
import { requireTenant } from './tenant.js';

/** The Data API's error body: `{"error":{"code","message","requestId"}}`. */
export function renderDataApiError(
  thrown: unknown,
  _request: HttpRequest | undefined,
  requestId: string,
): RenderedError {
  const error = toServiceError(thrown);
  const message = error.expose ? error.message : 'The request could not be completed';
  return {
    code: error.code,
    response: {
      status: error.status,
      headers: { 'content-type': 'application/json; charset=utf-8', ...error.headers },
      body: JSON.stringify({ error: { code: error.code, message, requestId, ...error.details } }),
    },
  };
}

/** The Data API's limits: a larger answer (or file, under `files/`) goes to S3 under `answers/<tenant>/`. */
export async function answerLimits(tenant: TenantConfig): Promise<AnswerLimits> {
  return largeAnswerLimits(`answers/${tenant.id}`);
}

/** Tenant from the path and HTTP Basic credentials: the gate of every Data API route. */
export async function authenticate(request: HttpRequest): Promise<TenantConfig> {
  const tenant = await requireTenant(request);
  await requireBasicAuth(tenant, request.headers.authorization, getSettings().credentialCacheMs);
  return tenant;
}

/**
 * The one value of a query parameter, or undefined. Given twice it is a 400 `code`: which value was
 * meant (`rows=1&rows=2`, or two conditions the caller may think are combined) cannot be told.
 */
export function singleQueryParam(request: HttpRequest, name: string, code: string): string | undefined {
  const values = request.query.getAll(name);
  if (values.length > 1) {
    throw badRequest(code, `The query parameter "${name}" is given ${values.length} times; give it once`);
  }
  return values[0];
}

/** The condition compiler of each dialect, given by the one function that reads conditions. */
export type ConditionTranslators = Readonly<Record<SqlDialectName, ConditionTranslator>>;

/** A Data API read route: authenticated, on the tenant's application database. */
export function dataApiReadHandler(
  read: (ctx: DataApiContext, request: HttpRequest) => Promise<Answer>,
  conditions?: ConditionTranslators,
) {
  return httpHandler(async function readRoute(request) {
    const tenant = await authenticate(request);
    const ctx: DataApiContext = {
      // Reads stop in the database when the invocation's time is up.
      reader: byDialect(cancelledBy(await openDatabase(tenant.database), request.signal), {
        mssql: (db) => createMssqlDataSourceReader(db, conditions?.mssql),
        postgres: (db) => createEmbeddedDataSourceReader(db, conditions?.postgres),
      }),
      allowed: tenant.dataSources,
      limits: await answerLimits(tenant),
      batchRows: getSettings().readBatchRows,
    };
    return answerResponse(await read(ctx, request), { 'content-type': 'application/json' });
  }, renderDataApiError);
}
