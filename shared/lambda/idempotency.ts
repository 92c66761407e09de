import { createEmbeddedIdempotencyStore } from '../adapters/embedded/idempotency-store.js';
import { createMssqlIdempotencyStore } from '../adapters/mssql/idempotency-store.js';
import { byDialect } from '../config/databases.js';
import type { TenantConfig } from '../config/tenants.js';
import type { Answer } from '../core/answers.js';
import type { Database } from '../core/database.js';
import {
  IDEMPOTENT_REPLAYED_HEADER,
  type IdempotencyStore,
  type RecordedAnswer,
} from '../core/idempotency.js';
import { presignStoredAnswer } from './large-answers.js';
import type { HttpResponse } from './request-context.js';

/** The keys' records of a tenant's database (CONTRACT 5a), in its dialect. */
export function tenantIdempotencyStore(db: Database, tenant: Pick<TenantConfig, 'id'>): IdempotencyStore {
  return byDialect(db, {
    mssql: (mssql) => createMssqlIdempotencyStore(mssql, tenant.id),
    embedded: (embedded) => createEmbeddedIdempotencyStore(embedded, tenant.id),
  });
}

/**
 * An answer as it leaves, to be recorded under a key: its body, or, stored for being over the
 * inline limit, its object (a 303 presigned again on each replay).
 */
export function recordedAnswer(answer: Answer, contentType: string, status = 200): RecordedAnswer {
  if (answer.kind === 'redirect') {
    if (!answer.key) throw new Error('A stored answer without its key cannot be recorded');
    return { status: 303, contentType, objectKey: answer.key };
  }
  const body = typeof answer.body === 'string' ? Buffer.from(answer.body, 'utf8') : answer.body;
  return { status, contentType: answer.contentType, body };
}

/**
 * A recorded answer as HTTP, byte for byte as the first call answered it (a stored one presigned
 * anew), with `headers` (the request's own, such as its id) and, when nothing ran,
 * `Idempotent-Replayed: true`.
 */
export async function recordedResponse(
  recorded: RecordedAnswer,
  replayed: boolean,
  headers: Record<string, string> = {},
): Promise<HttpResponse> {
  const own: Record<string, string> = { ...headers, ...recorded.headers };
  if (recorded.contentType) own['content-type'] = recorded.contentType;
  if (replayed) own[IDEMPOTENT_REPLAYED_HEADER] = 'true';
  if (recorded.objectKey !== undefined) {
    return {
      status: recorded.status,
      // The presigned URL expires: never reuse this answer.
      headers: {
        ...own,
        location: await presignStoredAnswer(recorded.objectKey),
        'cache-control': 'no-store',
      },
      body: '',
    };
  }
  return { status: recorded.status, headers: own, body: recorded.body ?? '' };
}
