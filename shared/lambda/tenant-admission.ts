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
import { serviceMetrics } from './observability.js';
import type { RequestContext } from './request-context.js';

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
}));

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

/** Gives back a request's slot in its tenant's share; never throws (a slot not given back lapses on its own). */
export type SlotRelease = () => Promise<void>;

/**
 * Admits a request of `tenant` or throws `TenantRateLimitedError`, before any database work, and
 * notes the tenant's `RateLimit-Policy` on the request, which every answer then carries (the IETF
 * draft allows it on any answer), so that a client learns its limits without being refused first.
 * Answers how to give back the slot it took (none when uncounted): the tenant's route does once
 * the answer has left (tenant.ts); a request that never gets there (a crash, a time-out) holds it
 * until its invocation's time is up.
 * A store that does not answer within its time limit lets the request through, uncounted (logged,
 * and the metric TenantLimitsUnavailable): fairness is lost for that moment, the service is not.
 */
export async function admitTenantRequest(
  tenant: TenantConfig,
  ctx: RequestContext,
): Promise<SlotRelease | undefined> {
  const limits = tenantLimits(tenant);
  ctx.rateLimitPolicy = rateLimitPolicyField(limits);
  const started = performance.now();
  let decision: Awaited<ReturnType<TenantAdmission['admit']>>;
  try {
    decision = await (await admission()).admit(
      tenant.id,
      limits,
      ctx.deadline ?? Date.now() + FALLBACK_DEADLINE_MS,
    );
  } catch (error) {
    ctx.log.warn('tenant limits unavailable', {
      requestId: ctx.requestId,
      tenant: tenant.id,
      ...describeError(error),
    });
    serviceMetrics().count({ [MetricName.tenantLimitsUnavailable]: 1 }, [{}]);
    return undefined;
  }
  if (decision.admitted) {
    const { release } = decision;
    return async function releaseTenantSlot() {
      try {
        await release();
      } catch (error) {
        ctx.log.warn('tenant slot not given back', {
          requestId: ctx.requestId,
          ...describeError(error),
        });
      }
    };
  }
  ctx.log.info('tenant throttled', {
    requestId: ctx.requestId,
    tenant: tenant.id,
    limit: decision.limit,
    retryAfterSeconds: decision.retryAfterSeconds,
    decidedLocally: decision.local,
    decisionMs: Math.round((performance.now() - started) * 10) / 10,
  });
  serviceMetrics().count({ [MetricName.tenantThrottled]: 1 }, [{}, { tenant: tenant.id }]);
  throw new TenantRateLimitedError(decision, limits);
}
