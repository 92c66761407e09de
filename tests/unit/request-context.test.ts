import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAsFunctionInstance } from '../../shared/config/function-instance.js';
import { getSettings } from '../../shared/config/settings.js';
import { setTenantRegistry } from '../../shared/config/tenant-registry.js';
import { parseTenantRegistry } from '../../shared/config/tenants.js';
import type { LogFields } from '../../shared/core/log.js';
import { renderDataApiError } from '../../shared/lambda/data-api.js';
import { httpHandler, toHttpRequest } from '../../shared/lambda/http.js';
import { serviceLog, useObservability } from '../../shared/lambda/observability.js';
import { RequestContext } from '../../shared/lambda/request-context.js';
import { tenantRoute } from '../../shared/lambda/tenant.js';
import { httpApiEvent, invokeHttp } from '../support/http-api-event.js';

const HASH = 'scrypt$16384$8$1$ZGVtby10ZW5hbnQtc2FsdA==$x2bp48ourmNi7AJz+st/kNLkTjPJ/XnX7NIpiDrZ8ig=';

beforeAll(() => {
  setTenantRegistry(
    parseTenantRegistry({
      tenants: {
        'one-at-a-time': {
          database: { kind: 'embedded', name: 'unused' },
          dataApiUsers: [{ name: 'demo', passwordHash: HASH }],
          dataSources: '*',
          limits: { concurrentRequests: 1 },
        },
      },
    }),
  );
});
afterAll(() => setTenantRegistry(undefined));

const event = (tenant: string) =>
  httpApiEvent({ method: 'GET', route: '/{tenant}/JsonAPI/openapi.json', pathParameters: { tenant } });

function contextOf(tenant = 'one-at-a-time'): RequestContext {
  const arrived = event(tenant);
  return new RequestContext(arrived, toHttpRequest(arrived), { startedAt: performance.now() });
}

describe('Class: RequestContext', () => {
  it('names its caller in each line of the request once it is known, a line’s own caller first', () => {
    // Prepare
    const lines: (LogFields | undefined)[] = [];
    const previous = serviceLog();
    const keep = (_message: string, fields?: LogFields) => {
      lines.push(fields);
    };
    useObservability({ log: { debug: keep, info: keep, warn: keep, error: keep } });
    const ctx = contextOf();
    try {
      // Act
      ctx.log.info('before', { requestId: ctx.requestId });
      ctx.nameCaller('basic:demo');
      ctx.log.warn('after', { requestId: ctx.requestId });
      ctx.log.info('own', { requestId: ctx.requestId, caller: 'client:other' });
    } finally {
      useObservability({ log: previous });
    }
    // Assess
    const { traceId } = ctx.trace;
    expect(lines).toEqual([
      { traceId, requestId: 'test-request' },
      { traceId, requestId: 'test-request', caller: 'basic:demo' },
      { traceId, requestId: 'test-request', caller: 'client:other' },
    ]);
  });

  it("continues the caller's traceparent, and starts a trace where it is absent or malformed", () => {
    // Prepare
    const caller = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const withHeaders = (headers: Record<string, string>) => {
      const arrived = httpApiEvent({
        method: 'GET',
        route: '/{tenant}/JsonAPI/openapi.json',
        pathParameters: { tenant: 'one-at-a-time' },
        headers,
      });
      return new RequestContext(arrived, toHttpRequest(arrived), { startedAt: performance.now() });
    };
    // Act
    const continued = withHeaders({ traceparent: caller, tracestate: 'rojo=1' }).trace;
    const started = withHeaders({}).trace;
    const malformed = withHeaders({ traceparent: '00-zz', tracestate: 'rojo=1' }).trace;
    // Assess
    expect(continued.traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(continued.parentSpanId).toBe('00f067aa0ba902b7');
    expect(continued.tracestate).toBe('rojo=1');
    expect(started.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(malformed.traceId).not.toBe(started.traceId);
    expect(malformed.tracestate).toBeUndefined();
  });

  it("stops the request's work when the invocation's time is up", () => {
    // Prepare
    const ctx = contextOf();
    const invocation = new AbortController();
    ctx.cancelWith(invocation.signal);
    expect(ctx.signal.aborted).toBe(false);
    // Act
    invocation.abort();
    // Assess
    expect(ctx.signal.aborted).toBe(true);
  });
});

describe('Function: tenantRoute', () => {
  it('holds the tenant’s slot until the answer has left, whether the route answered or threw', async () => {
    // Prepare: an instance that runs what is left for after the answer only when told to.
    const afterAnswers: (() => Promise<void>)[] = [];
    const instance = {
      id: 'request-context#1',
      settings: getSettings().databasePool,
      afterAnswer: (task: () => Promise<void>) => {
        afterAnswers.push(task);
      },
    };
    let fail = false;
    const handler = httpHandler(
      tenantRoute(async ({ tenant }) => {
        if (fail) throw new Error('the route failed');
        return { status: 200, body: tenant.id };
      }),
      renderDataApiError,
    );
    const call = () => runAsFunctionInstance(instance, () => invokeHttp(handler, event('one-at-a-time')));
    const giveBack = async () => {
      for (const task of afterAnswers.splice(0)) await task();
    };
    for (const failing of [false, true]) {
      fail = failing;
      // Act
      const first = await call();
      const meanwhile = await call();
      await giveBack();
      fail = false;
      const next = await call();
      await giveBack();
      // Assess
      expect(first.statusCode).toBe(failing ? 500 : 200);
      expect(first.headers?.['ratelimit-policy']).toBe(
        '"rate";q=100;w=2, "concurrency";q=1;qu="concurrent-requests"',
      );
      expect(meanwhile.statusCode).toBe(429);
      expect(next.statusCode).toBe(200);
      // Every answer, errors included, carries the service's span (CONTRACT 8a).
      for (const answer of [first, meanwhile, next]) {
        expect(answer.headers?.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      }
    }
  });

  it("answers in the caller's trace with a span of its own, an error too, the unsampled flag kept", async () => {
    // Prepare
    const handler = httpHandler(
      tenantRoute(async () => ({ status: 200 })),
      renderDataApiError,
    );
    const traced = (tenant: string, flags: string) =>
      httpApiEvent({
        method: 'GET',
        route: '/{tenant}/JsonAPI/openapi.json',
        pathParameters: { tenant },
        headers: { traceparent: `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-${flags}` },
      });
    // Act
    const refused = await invokeHttp(handler, traced('nobody', '00'));
    // Assess
    expect(refused.statusCode).toBe(404);
    const [version, traceId, spanId, flags] = String(refused.headers?.traceparent).split('-');
    expect([version, traceId, flags]).toEqual(['00', '4bf92f3577b34da6a3ce929d0e0e4736', '00']);
    expect(spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(spanId).not.toBe('00f067aa0ba902b7');
  });

  it('answers 404 for a tenant the registry does not know, and counts nothing', async () => {
    // Prepare
    const handler = httpHandler(
      tenantRoute(async () => ({ status: 200 })),
      renderDataApiError,
    );
    // Act
    const result = await invokeHttp(handler, event('nobody'));
    // Assess
    expect(result.statusCode).toBe(404);
    expect(JSON.parse(String(result.body)).error.code).toBe('tenant_not_found');
    expect(result.headers?.['ratelimit-policy']).toBeUndefined();
  });
});
