import { afterEach, describe, expect, it } from 'vitest';
import { resetSettings } from '../../shared/config/settings.js';
import { parseTenantRegistry } from '../../shared/config/tenants.js';
import {
  rateLimitField,
  rateLimitPolicyField,
  rateRetryAfterSeconds,
} from '../../shared/core/tenant-limits.js';
import { renderDataApiError } from '../../shared/lambda/data-api.js';
import { TenantRateLimitedError, tenantLimits } from '../../shared/lambda/tenant-admission.js';
import { renderWebApiError } from '../../shared/lambda/web-api/http.js';

const HASH = 'scrypt$16384$8$1$ZGVtby10ZW5hbnQtc2FsdA==$x2bp48ourmNi7AJz+st/kNLkTjPJ/XnX7NIpiDrZ8ig=';
const tenant = {
  database: { kind: 'embedded', name: 'demo' },
  dataApiUsers: [{ name: 'demo', passwordHash: HASH }],
  dataSources: '*',
};
const saved = { ...process.env };
afterEach(() => {
  process.env = { ...saved };
  resetSettings();
});

describe('fair share settings', () => {
  it("takes a tenant's own limits over the deployment's, each on its own", () => {
    process.env.TENANT_CONCURRENT_REQUESTS = '5';
    process.env.TENANT_REQUESTS_PER_SECOND = '20';
    resetSettings();
    const registry = parseTenantRegistry({
      tenants: {
        a: tenant,
        b: { ...tenant, limits: { concurrentRequests: 2 } },
        c: { ...tenant, limits: {} },
      },
    });
    expect(tenantLimits(registry.get('a')!)).toEqual({ concurrentRequests: 5, requestsPerSecond: 20 });
    expect(tenantLimits(registry.get('b')!)).toEqual({ concurrentRequests: 2, requestsPerSecond: 20 });
    expect(tenantLimits(registry.get('c')!)).toEqual({ concurrentRequests: 5, requestsPerSecond: 20 });
  });

  it("refuses a tenant's share that would hold a whole function, naming the setting", () => {
    process.env.REQUEST_FUNCTION_CONCURRENCY = '10';
    resetSettings();
    expect(() =>
      parseTenantRegistry({ tenants: { a: { ...tenant, limits: { concurrentRequests: 10 } } } }),
    ).toThrow(
      /tenants\.a\.limits\.concurrentRequests: must be below each HTTP function's reserved concurrency \(10/,
    );
    expect(
      parseTenantRegistry({ tenants: { a: { ...tenant, limits: { concurrentRequests: 9 } } } }).ids(),
    ).toEqual(['a']);
    expect(() =>
      parseTenantRegistry({ tenants: { a: { ...tenant, limits: { requestsPerSecond: 0 } } } }),
    ).toThrow(/tenants\.a\.limits\.requestsPerSecond/);
    expect(() => parseTenantRegistry({ tenants: { a: { ...tenant, limits: { burst: 3 } } } })).toThrow(
      /burst/,
    );
  });

  it('names a bad default by its variable', () => {
    process.env.TENANT_CONCURRENT_REQUESTS = '0';
    resetSettings();
    expect(() => tenantLimits(parseTenantRegistry({ tenants: { a: tenant } }).get('a')!)).toThrow(
      /TENANT_CONCURRENT_REQUESTS must be an integer between 1 and 1000/,
    );
  });
});

describe('a refusal as the client sees it', () => {
  const limits = { concurrentRequests: 8, requestsPerSecond: 50 };

  it('describes both limits in RateLimit-Policy and the one that refused in RateLimit', () => {
    expect(rateLimitPolicyField(limits)).toBe('"rate";q=100;w=2, "concurrency";q=8;qu="concurrent-requests"');
    expect(rateLimitField({ admitted: false, limit: 'rate', retryAfterSeconds: 3, local: true })).toBe(
      '"rate";r=0;t=3',
    );
    // 50/s with a burst of 100: a tat 2.5 s ahead admits again 0.52 s later, said as 1 s.
    const now = 1_000_000;
    expect(rateRetryAfterSeconds(limits, now + 2500, now)).toBe(1);
    expect(rateRetryAfterSeconds(limits, now + 6000, now)).toBe(5);
  });

  it('answers the Data API 429 tenant_rate_limited with Retry-After and the RateLimit fields', () => {
    const refusal = { admitted: false, limit: 'concurrency', retryAfterSeconds: 1, local: false } as const;
    const { response, code } = renderDataApiError(
      new TenantRateLimitedError(refusal, limits),
      undefined,
      'r-1',
    );
    expect(code).toBe('tenant_rate_limited');
    expect(response.status).toBe(429);
    expect(response.headers).toMatchObject({
      'retry-after': '1',
      'ratelimit-policy': rateLimitPolicyField(limits),
      ratelimit: '"concurrency";r=0;t=1',
    });
    expect(JSON.parse(String(response.body))).toEqual({
      error: {
        code: 'tenant_rate_limited',
        message: 'The tenant has 8 requests in progress, its limit; try again in 1 s',
        requestId: 'r-1',
      },
    });
  });

  it('answers the Web API 429 with its envelope, errorCode 130, and the same headers', () => {
    const refusal = { admitted: false, limit: 'rate', retryAfterSeconds: 2, local: true } as const;
    const { response, code } = renderWebApiError(
      new TenantRateLimitedError(refusal, limits),
      { headers: { accept: 'application/json' } } as never,
      'r-2',
    );
    expect(code).toBe('130');
    expect(response.status).toBe(429);
    expect(response.headers).toMatchObject({ 'retry-after': '2', ratelimit: '"rate";r=0;t=2' });
    expect(JSON.parse(String(response.body))).toEqual({
      id: null,
      vlResult: -1,
      data: [
        {
          error: [
            {
              errorCode: '130',
              errorMessage: 'The tenant is over its 50 requests per second; try again in 2 s',
            },
          ],
        },
      ],
    });
  });
});
