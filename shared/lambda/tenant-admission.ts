import { randomUUID } from 'node:crypto';
import { InProcessTenantLoadStore } from '../adapters/memory/tenant-load-store.js';
import { getSettings } from '../config/settings.js';
import type { TenantConfig } from '../config/tenants.js';
import { ServiceError } from '../core/errors.js';
import { describeError } from '../core/log.js';
import { MetricName } from '../core/metrics.js';
import { processWide } from '../core/process-wide.js';
import {
  type Refusal,
  rateLimitField,
  rateLimitPolicyField,
  TenantAdmission,
  type TenantLimits,
} from '../core/tenant-limits.js';
import type { HttpRequest } from './http.js';
import { serviceLog, serviceMetrics } from './observability.js';

/** The code of a request refused for its tenant's fair share (CONTRACT.md section 2). */
export const TENANT_RATE_LIMITED = 'tenant_rate_limited';

/** A refusal: 429 with `Retry-After` and the RateLimit fields; the Web API gives it errorCode 130. */
export class TenantRateLimitedError extends ServiceError {
  override readonly name = 'TenantRateLimitedError';
  constructor(
    readonly refusal: Refusal,
    limits: TenantLimits,
  ) {
    super(
      429,
      TENANT_RATE_LIMITED,
      refusal.limit === 'concurrency'
        ? `The tenant has ${limits.concurrentRequests} ${limits.concurrentRequests === 1 ? 'request' : 'requests'} in progress, its limit; try again in ${refusal.retryAfterSeconds} s`
        : `The tenant is over its ${limits.requestsPerSecond} requests per second; try again in ${refusal.retryAfterSeconds} s`,
      {
        headers: {
          'retry-after': String(refusal.retryAfterSeconds),
          'ratelimit-policy': rateLimitPolicyField(limits),
          ratelimit: rateLimitField(refusal),
        },
      },
    );
  }
}

/** The deployment's defaults, overridden by the tenant's own `limits` in the registry. */
export function tenantLimits(tenant: TenantConfig): TenantLimits {
  const { defaults } = getSettings().tenantLimits;
  return {
    concurrentRequests: tenant.limits?.concurrentRequests ?? defaults.concurrentRequests,
    requestsPerSecond: tenant.limits?.requestsPerSecond ?? defaults.requestsPerSecond,
  };
}

/** One admission per process and table (process-wide: the local stack's packaged functions share it). */
const admissions = processWide('tenant-admission', () => ({
  byTable: new Map<string, Promise<TenantAdmission>>(),
  /** Each request's slot, given back once its answer has left (`releaseTenantSlot`). */
  releases: new WeakMap<HttpRequest, () => Promise<void>>(),
  /** Each counted request's `RateLimit-Policy` field, sent on its answer whatever it is. */
  policies: new WeakMap<HttpRequest, string>(),
}));

/**
 * The `RateLimit-Policy` field of a request counted against its tenant's fair share: every answer
 * of a counted route carries it (the IETF draft allows it on any answer), so that a client learns
 * its limits without being refused first. Undefined for a request that was not counted.
 */
export function rateLimitPolicyOf(request: HttpRequest): string | undefined {
  return admissions.policies.get(request);
}

/**
 * The admission of this process for the configured table. The DynamoDB client is imported on first
 * use, as the SQS client is: the functions without an HTTP route never load it, and an HTTP
 * function does not parse it during its cold start's init.
 */
async function admission(): Promise<TenantAdmission> {
  const { table, timeoutMs } = getSettings().tenantLimits;
  const key = `${table ?? ''} ${process.env.AWS_ENDPOINT_URL_DYNAMODB ?? ''}`;
  let found = admissions.byTable.get(key);
  if (!found) {
    found = table
      ? import('../adapters/dynamodb/tenant-load-store.js').then(
          ({ DynamoDbTenantLoadStore, dynamoDbClient }) =>
            new TenantAdmission(new DynamoDbTenantLoadStore(dynamoDbClient(), table, timeoutMs), randomUUID),
        )
      : Promise.resolve(new TenantAdmission(new InProcessTenantLoadStore(), randomUUID));
    admissions.byTable.set(key, found);
    // A failed import is not kept: the next request tries again rather than going uncounted for
    // the life of the instance.
    found.catch(() => admissions.byTable.delete(key));
  }
  return found;
}

/** When the invocation's time is up at the latest: its slot lapses then if it is never given back. */
const FALLBACK_DEADLINE_MS = 30_000;

/**
 * Admits a request of `tenant` or throws `TenantRateLimitedError`, before any database work. The
 * slot it takes is given back by `releaseTenantSlot(request)`, which the HTTP handler runs once the
 * answer has left (after-answer.ts); a request that never gets there (a crash, a time-out) holds
 * it until its invocation's time is up.
 * A store that does not answer within its time limit lets the request through, uncounted (logged,
 * and the metric TenantLimitsUnavailable): fairness is lost for that moment, the service is not.
 */
export async function admitTenantRequest(tenant: TenantConfig, request: HttpRequest): Promise<void> {
  if (admissions.releases.has(request)) return;
  const limits = tenantLimits(tenant);
  admissions.policies.set(request, rateLimitPolicyField(limits));
  const started = performance.now();
  let decision: Awaited<ReturnType<TenantAdmission['admit']>>;
  try {
    decision = await (await admission()).admit(
      tenant.id,
      limits,
      request.deadline ?? Date.now() + FALLBACK_DEADLINE_MS,
    );
  } catch (error) {
    serviceLog().warn('tenant limits unavailable', {
      requestId: request.requestId,
      tenant: tenant.id,
      ...describeError(error),
    });
    serviceMetrics().count({ [MetricName.tenantLimitsUnavailable]: 1 }, [{}]);
    return;
  }
  if (decision.admitted) {
    admissions.releases.set(request, decision.release);
    return;
  }
  serviceLog().info('tenant throttled', {
    requestId: request.requestId,
    tenant: tenant.id,
    limit: decision.limit,
    retryAfterSeconds: decision.retryAfterSeconds,
    decidedLocally: decision.local,
    decisionMs: Math.round((performance.now() - started) * 10) / 10,
  });
  serviceMetrics().count({ [MetricName.tenantThrottled]: 1 }, [{}, { tenant: tenant.id }]);
  throw new TenantRateLimitedError(decision, limits);
}

/** Gives back the slot `request` took, if any; errors are logged, the slot then lapses on its own. */
export async function releaseTenantSlot(request: HttpRequest): Promise<void> {
  const release = admissions.releases.get(request);
  if (!release) return;
  admissions.releases.delete(request);
  try {
    await release();
  } catch (error) {
    serviceLog().warn('tenant slot not given back', {
      requestId: request.requestId,
      ...describeError(error),
    });
  }
}
