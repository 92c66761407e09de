import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { createOtelSpanRecorder } from '../../shared/adapters/otel/span-recorder.js';
import { statementOperation, tracedBy } from '../../shared/adapters/otel/traced-database.js';
import type { Database } from '../../shared/core/database.js';
import { childSpan, continueTrace, startTrace } from '../../shared/core/trace-context.js';
import {
  bothRecorders,
  noSpanRecorder,
  recordSpan,
  type SpanRecord,
  spanClock,
  spanRecorder,
  useSpanRecorder,
} from '../../shared/core/tracing.js';
import { tracingConfigured } from '../../shared/lambda/tracing.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

/** A recorder that keeps what it is told. */
function keeping() {
  const spans: SpanRecord[] = [];
  return {
    spans,
    recorder: { enabled: true, record: (span: SpanRecord) => spans.push(span), flush: async () => {} },
  };
}

/** A database port that answers every statement with one row. */
function fakeDatabase(dialect: 'mssql' | 'embedded' = 'mssql'): Database {
  return {
    dialect: { name: dialect, quoteIdent: (name) => name, param: (n) => `@p${n}`, paginate: () => '' },
    query: async () => [{ SECRET_ROW: 'row value' }],
    async *streamBatches() {
      yield [{ SECRET_ROW: 'row value' }];
    },
    findDataSource: async () => undefined,
    listDataSources: async () => [],
    transaction: async (fn) => fn({ dialect: fakeDatabase(dialect).dialect, query: async () => [] }),
    close: async () => {},
  };
}

afterEach(() => useSpanRecorder(noSpanRecorder));

describe('the span port (shared/core/tracing.ts)', () => {
  it('is off by default: nothing recorded, the database not wrapped, flush a no-op', async () => {
    expect(spanRecorder()).toBe(noSpanRecorder);
    expect(noSpanRecorder.enabled).toBe(false);
    const db = fakeDatabase();
    expect(tracedBy(db, startTrace())).toBe(db);
    expect(() =>
      recordSpan({ name: 'x', kind: 'internal', context: startTrace(), startTime: 0, endTime: 1 }),
    ).not.toThrow();
    await expect(noSpanRecorder.flush()).resolves.toBeUndefined();
  });

  it('tracing is configured by OTEL_EXPORTER_OTLP_ENDPOINT (or the traces one) unless OTEL_SDK_DISABLED', () => {
    expect(tracingConfigured({})).toBe(false);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe(true);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' })).toBe(
      true,
    );
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_SDK_DISABLED: 'true' })).toBe(
      false,
    );
  });

  it('names a statement by its operation, never a literal, a comment or a parameter', () => {
    expect(statementOperation('SELECT TOP (@p1) * FROM dbo.SUBJECT WHERE ICO = @p2')).toBe('SELECT');
    expect(statementOperation("  -- 'secret'\n insert into x values ('hunter2')")).toBe('INSERT');
    expect(statementOperation('EXEC [dbo].[WS_GET_DATA] @params = @p1')).toBe('EXEC dbo.WS_GET_DATA');
    expect(statementOperation("EXEC @result = sp_getapplock @Resource = @p1, @LockMode = 'Exclusive'")).toBe(
      'EXEC sp_getapplock',
    );
    expect(statementOperation('DECLARE @x int; EXEC dbo.P @p1')).toBe('EXEC dbo.P');
    expect(statementOperation('WITH c AS (SELECT 1 AS a) UPDATE t SET a = 1')).toBe('UPDATE');
    expect(statementOperation("/* EXEC dbo.NOT_THIS */ SELECT 'EXEC dbo.NOR_THIS'")).toBe('SELECT');
    expect(statementOperation('')).toBe('SQL');
  });

  it('makes a span per statement, streamed batch and transaction statement, child of the parent, with db.system only', async () => {
    const { spans, recorder } = keeping();
    useSpanRecorder(recorder);
    const parent = continueTrace({ traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01` });
    const db = tracedBy(fakeDatabase('embedded'), parent);
    await db.query("SELECT * FROM t WHERE name = 'Alice'", ['secret-param']);
    for await (const _ of db.streamBatches('SELECT * FROM t', [42], 10)) {
      // drained
    }
    await db.transaction((tx) => tx.query('INSERT INTO t VALUES (@p1)', ['hunter2']));
    expect(spans.map((span) => span.name)).toEqual(['SELECT', 'SELECT', 'INSERT']);
    for (const span of spans) {
      expect(span.kind).toBe('client');
      expect(span.context.traceId).toBe(TRACE_ID);
      expect(span.context.parentSpanId).toBe(parent.spanId);
      expect(span.attributes).toEqual({
        'db.system': 'postgresql',
        'db.system.name': 'postgresql',
        'db.operation.name': span.name,
      });
      expect(span.endTime).toBeGreaterThanOrEqual(span.startTime);
    }
  });

  it('tells both recorders of a span, and flushes both (the local memory beside the exporter)', async () => {
    const first = keeping();
    const second = keeping();
    const both = bothRecorders(first.recorder, noSpanRecorder);
    expect(both.enabled).toBe(true);
    useSpanRecorder(bothRecorders(first.recorder, second.recorder));
    recordSpan({ name: 'x', kind: 'internal', context: startTrace(), startTime: 0, endTime: 1 });
    expect([first.spans.length, second.spans.length]).toEqual([1, 1]);
    await expect(spanRecorder().flush()).resolves.toBeUndefined();
  });

  it('records nothing of an unsampled trace, and does not wrap its database', () => {
    const { spans, recorder } = keeping();
    useSpanRecorder(recorder);
    const unsampled = continueTrace({ traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-00` });
    const db = fakeDatabase();
    expect(tracedBy(db, unsampled)).toBe(db);
    recordSpan({ name: 'x', kind: 'server', context: unsampled, startTime: 0, endTime: 1 });
    expect(spans).toEqual([]);
  });
});

describe('the OpenTelemetry adapter (shared/adapters/otel)', () => {
  it('exports each span in the ids the service propagated, its parent, links and kind', async () => {
    const exporter = new InMemorySpanExporter();
    const recorder = createOtelSpanRecorder({ serviceName: 'test', exporter });
    const server = continueTrace({ traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01` });
    const send = childSpan(server);
    const linked = startTrace();
    const start = spanClock();
    recorder.record({
      name: 'GET /x',
      kind: 'server',
      context: server,
      startTime: start,
      endTime: start + 2.5,
    });
    recorder.record({
      name: 'send q',
      kind: 'producer',
      context: send,
      startTime: start,
      endTime: start + 1,
      links: [{ traceId: linked.traceId, spanId: linked.spanId, sampled: true }],
      failed: true,
    });
    await recorder.flush();
    const [first, second] = exporter.getFinishedSpans();
    expect(first!.spanContext()).toMatchObject({ traceId: TRACE_ID, spanId: server.spanId, traceFlags: 1 });
    expect(first!.parentSpanContext?.spanId).toBe('00f067aa0ba902b7');
    expect(first!.kind).toBe(1);
    expect(first!.resource.attributes['service.name']).toBe('test');
    expect(second!.parentSpanContext?.spanId).toBe(server.spanId);
    expect(second!.links[0]!.context).toMatchObject({ traceId: linked.traceId, spanId: linked.spanId });
    expect(second!.status.code).toBe(2);
    const [seconds, nanos] = first!.startTime;
    expect(seconds * 1000 + nanos / 1e6).toBeCloseTo(start, 3);
  });
});
