import { type Attributes, type Link, SpanKind, SpanStatusCode, TraceFlags } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { SpanKind as PortSpanKind, SpanRecord, SpanRecorder } from '../../core/tracing.js';

/**
 * The span port (shared/core/tracing.ts) on OpenTelemetry's SDK: each finished span of the
 * service's becomes the SDK's `ReadableSpan`, in the ids the service propagated, and goes to an
 * OTLP/HTTP exporter (JSON) through a batch processor. Loaded only when `OTEL_EXPORTER_OTLP_ENDPOINT`
 * is set (shared/lambda/tracing.ts): with tracing off no function imports this file or the SDK.
 *
 * No `Tracer` of the SDK's: it would make ids of its own, and the ids must be the ones already on
 * the answer's, the message's and the POST's `traceparent`; nor a context manager
 * (AsyncLocalStorage), which the service avoids on purpose (request-context.ts). The processor and
 * the exporter are the SDK's, so the OTLP encoding, retries and `OTEL_EXPORTER_OTLP_*` settings
 * (headers, a traces-only endpoint, time-out) are its.
 *
 * `BatchSpanProcessor` rather than `SimpleSpanProcessor`: the simple one POSTs each span as it ends
 * (a request with ten statements makes eleven POSTs, each competing with the request for the
 * instance's CPU and sockets); the batch one keeps them and sends one POST per invocation when the
 * handler wrapper flushes it (after the answer, where the host allows: after-answer.ts). Its own
 * timer does not matter in Lambda, where a frozen instance runs no timer: the flush at the end of
 * each invocation is what sends, so nothing waits in a frozen instance.
 */

const KIND: Record<PortSpanKind, SpanKind> = {
  internal: SpanKind.INTERNAL,
  server: SpanKind.SERVER,
  client: SpanKind.CLIENT,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
};

/** Milliseconds since the epoch (with a fraction) as OpenTelemetry's `[seconds, nanoseconds]`. */
function hrTime(ms: number): [number, number] {
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.min(999_999_999, Math.round((ms - seconds * 1000) * 1e6))];
}

const flagsOf = (sampled: boolean) => (sampled ? TraceFlags.SAMPLED : TraceFlags.NONE);

export interface OtelSpanRecorderOptions {
  /** `service.name` of the resource. */
  readonly serviceName: string;
  /** Replaces the OTLP/HTTP exporter (tests). */
  readonly exporter?: SpanExporter;
}

/** A recorder that exports over OTLP/HTTP to `OTEL_EXPORTER_OTLP_ENDPOINT` (or the traces endpoint). */
export function createOtelSpanRecorder(options: OtelSpanRecorderOptions): SpanRecorder {
  const resource = resourceFromAttributes({ 'service.name': options.serviceName });
  const instrumentationScope = { name: 'erp-integration-gateway' };
  const processor = new BatchSpanProcessor(options.exporter ?? new OTLPTraceExporter({}));
  function readable(span: SpanRecord): ReadableSpan {
    const { context } = span;
    const traceFlags = flagsOf(context.sampled);
    const startTime = hrTime(span.startTime);
    const endTime = hrTime(Math.max(span.startTime, span.endTime));
    const links: Link[] = (span.links ?? []).map((link) => ({
      context: {
        traceId: link.traceId,
        spanId: link.spanId,
        traceFlags: flagsOf(link.sampled),
        isRemote: true,
      },
    }));
    return {
      name: span.name,
      kind: KIND[span.kind],
      spanContext: () => ({ traceId: context.traceId, spanId: context.spanId, traceFlags }),
      ...(context.parentSpanId
        ? {
            parentSpanContext: {
              traceId: context.traceId,
              spanId: context.parentSpanId,
              traceFlags,
              isRemote: true,
            },
          }
        : {}),
      startTime,
      endTime,
      status: { code: span.failed ? SpanStatusCode.ERROR : SpanStatusCode.UNSET },
      attributes: (span.attributes ?? {}) as Attributes,
      links,
      events: [],
      duration: hrTime(Math.max(0, span.endTime - span.startTime)),
      ended: true,
      resource,
      instrumentationScope,
      droppedAttributesCount: 0,
      droppedEventsCount: 0,
      droppedLinksCount: 0,
    };
  }
  return {
    enabled: true,
    record(span) {
      processor.onEnd(readable(span));
    },
    flush: () => processor.forceFlush(),
  };
}
