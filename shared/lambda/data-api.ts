import { createHash } from 'node:crypto';
import { createEmbeddedDataSourceReader } from '../adapters/embedded/data-source-reader.js';
import { createMssqlDataSourceReader } from '../adapters/mssql/data-source-reader.js';
import { byDialect, openDatabase } from '../config/databases.js';
import { getSettings } from '../config/settings.js';
import type { TenantConfig } from '../config/tenants.js';
import type { Answer, AnswerLimits } from '../core/answers.js';
import { requireScope, type Scope, type SourceScopeFamily, sourceGrant } from '../core/auth/caller.js';
import type { ConditionTranslator } from '../core/condition/index.js';
import type { DataAnswer, DataApiContext, NextPage } from '../core/data-api/read.js';
import { cancelledBy, type SqlDialectName } from '../core/database.js';
import { badRequest } from '../core/errors.js';
import { matchesIfNoneMatch } from '../core/files/entity-tag.js';
import { authenticateCaller } from './caller-auth.js';
import { renderDataApiError } from './data-api-errors.js';
import { httpHandler } from './http.js';
import { answerResponse, largeAnswerLimits } from './large-answers.js';
import type { CallerRequestContext, HttpRequest, HttpResponse } from './request-context.js';
import { tenantRoute } from './tenant.js';

/** The Data API's error body (data-api-errors.ts: the authorization server shares it without the readers). */
export { renderDataApiError };

/** The Data API's limits: a larger answer (or file, under `files/`) goes to S3 under `answers/<tenant>/`. */
export async function answerLimits(tenant: TenantConfig): Promise<AnswerLimits> {
  return largeAnswerLimits(`answers/${tenant.id}`);
}

/** A Data API route: it runs once its tenant is admitted and its caller authenticated. */
export type DataApiRoute = (ctx: CallerRequestContext) => Promise<HttpResponse>;

/**
 * A Data API route as a Lambda handler. Tenant from the path, then the caller (HTTP Basic or a
 * bearer token, CONTRACT 4d): the gate of every Data API route. With `scope`, a token without it
 * is refused (403 `insufficient_scope`); the source scopes are checked where a source is resolved
 * (`dataApiContext`'s grant).
 */
export function dataApiHandler(route: DataApiRoute, scope?: Scope) {
  return httpHandler(
    tenantRoute(async function authenticatedRoute(ctx) {
      const authenticated = await authenticateCaller(ctx);
      if (scope) requireScope(authenticated.caller, authenticated.tenant.id, scope);
      return route(authenticated);
    }),
    renderDataApiError,
  );
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

/**
 * The Data API's read context of the request's tenant: its database, what it may read and see (a
 * bearer token's source scopes; a Basic user may read everything), its cursors' key.
 */
export async function dataApiContext(
  ctx: CallerRequestContext,
  conditions?: ConditionTranslators,
  /** The scopes that let a token use a source on this route: reads `data.read`, changes `changes.read`. */
  family: SourceScopeFamily = 'data.read',
): Promise<DataApiContext> {
  const { tenant, caller } = ctx;
  return {
    tenant: tenant.id,
    grant: caller.kind === 'bearer' ? sourceGrant(caller, tenant.id, family) : undefined,
    // Reads stop in the database when the invocation's time is up.
    reader: byDialect(cancelledBy(await openDatabase(tenant.database, ctx.trace), ctx.signal), {
      mssql: (db) => createMssqlDataSourceReader(db, conditions?.mssql),
      embedded: (db) => createEmbeddedDataSourceReader(db, conditions?.embedded),
    }),
    allowed: tenant.dataSources,
    hidden: tenant.hiddenColumns,
    // Without the registry's signing keys, pages link by `fromRow` (docs/configuration.md).
    cursors:
      tenant.signingKeys.length > 0
        ? { keys: tenant.signingKeys.map((key) => Buffer.from(key, 'utf8')), tenant: tenant.id }
        : undefined,
    limits: await answerLimits(tenant),
    batchRows: getSettings().readBatchRows,
  };
}

/**
 * A Data API read route: authenticated, on the tenant's application database. An answer given
 * inline carries a strong ETag of its body and is answered 304 when the caller has it already
 * (CONTRACT 4a); a full page carries the `Link` to the next.
 */
export function dataApiReadHandler(
  read: (ctx: DataApiContext, request: HttpRequest) => Promise<DataAnswer>,
  conditions?: ConditionTranslators,
) {
  return dataApiHandler(async function readRoute(ctx) {
    const { request } = ctx;
    const answer = await read(await dataApiContext(ctx, conditions), request);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (answer.next) headers.link = nextPageLink(request, answer.next);
    if (answer.kind === 'redirect') return answerResponse(answer, headers);
    return conditionalAnswer(request, answer, headers);
  }, 'data.read');
}

/**
 * 200 with a strong ETag of the body (SHA-256: it changes whenever a byte does) and
 * `Cache-Control: private, no-cache` (a cache may keep it, but asks each time); 304 without a body
 * when `If-None-Match` lists the tag (RFC 9110: weak comparison, several tags, `*`).
 */
export function conditionalAnswer(
  request: HttpRequest,
  answer: Extract<Answer, { kind: 'inline' }>,
  headers: Record<string, string>,
): HttpResponse {
  const etag = `"${createHash('sha256').update(answer.body).digest('base64url')}"`;
  const validators = { etag, 'cache-control': 'private, no-cache' };
  if (matchesIfNoneMatch(request.headers['if-none-match'], etag)) {
    const { 'content-type': _, ...rest } = headers;
    return { status: 304, headers: { ...rest, ...validators }, body: '' };
  }
  return answerResponse(answer, { ...headers, ...validators });
}

/** `<path?after=…&rows=…[&columns=…]>; rel="next"` (or `fromRow=` for a source without a key). */
function nextPageLink(request: HttpRequest, next: NextPage): string {
  const query = new URLSearchParams();
  if ('after' in next) query.set('after', next.after);
  else query.set('fromRow', String(next.fromRow));
  query.set('rows', request.query.get('rows') ?? '');
  const columns = request.query.get('columns');
  if (columns !== null) query.set('columns', columns);
  return `<${request.path}?${query.toString()}>; rel="next"`;
}
