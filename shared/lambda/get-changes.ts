import { openDatabase } from '../config/databases.js';
import type { TenantConfig } from '../config/tenants.js';
import { type ChangeFeedContext, type ChangeFeedStore, getChanges } from '../core/data-api/changes.js';
import { cancelledBy } from '../core/database.js';
import { changeFeedStore } from './change-feed.js';
import { dataApiContext, dataApiHandler, singleQueryParam } from './data-api.js';
import { answerResponse } from './large-answers.js';
import type { HttpRequest } from './request-context.js';

/** A tenant's change feed on its application database's store. */
function changeFeedContext(tenant: TenantConfig, store: ChangeFeedStore): ChangeFeedContext {
  return {
    store,
    recorded: tenant.changeFeed,
    retentionDays: tenant.changeRetentionDays,
    // The registry refuses a changeFeed without signing keys.
    tokens: { keys: tenant.signingKeys.map((key) => Buffer.from(key, 'utf8')), tenant: tenant.id },
  };
}

/** `<path?token=…[&rows=…][&columns=…]>; rel="next"|"sync"`: the caller's rows and columns go on. */
function changesLink(request: HttpRequest, rel: string, token: string): string {
  const query = new URLSearchParams();
  query.set('token', token);
  const rows = request.query.get('rows');
  if (rows !== null) query.set('rows', rows);
  const columns = request.query.get('columns');
  if (columns !== null) query.set('columns', columns);
  return `<${request.path}?${query.toString()}>; rel="${rel}"`;
}

/**
 * GET /{tenant}/JsonAPI/Data/getChanges/{DataSource}[?token=][&rows=][&columns=] (CONTRACT 4b). No
 * ETag: the links are the state, and the same token answers more as the ERP writes.
 */
export function changesHandler() {
  return dataApiHandler(async function changesRoute(ctx) {
    const { tenant, request } = ctx;
    const data = await dataApiContext(ctx, undefined, 'changes.read');
    // The store's statements stop in the database when the invocation's time is up, as the reads do.
    const db = cancelledBy(await openDatabase(tenant.database, ctx.trace), ctx.signal);
    const feed = changeFeedContext(tenant, changeFeedStore(db));
    const { answer, link } = await getChanges(data, feed, request.params.dataSource ?? '', {
      token: singleQueryParam(request, 'token', 'invalid_sync_token'),
      rows: singleQueryParam(request, 'rows', 'invalid_paging'),
      columns: singleQueryParam(request, 'columns', 'invalid_columns'),
    });
    return answerResponse(answer, {
      'content-type': 'application/json',
      'cache-control': 'private, no-store',
      link: changesLink(request, link.rel, link.token),
    });
  }, 'changes.read');
}
