import { processWide } from './process-wide.js';
import { parseTraceparent, type TraceContext } from './trace-context.js';

/**
 * Span export (CONTRACT 8a), as the service's code sees it: a port that is told of each finished
 * span. The ids are the ones trace-context.ts made for what the span describes (the `traceparent`
 * an answer, a message or a POST carries), so the exported trace and the propagated one are the
 * same; no tracer of a library's decides them. The default records nothing: with tracing off the
 * cost is one property read per span. The OpenTelemetry adapter (shared/adapters/otel) is loaded
 * with `import()` only when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (shared/lambda/tracing.ts); this
 * file imports no SDK.
 */

/** OpenTelemetry's span kinds, by name. */
export type SpanKind = 'internal' | 'server' | 'client' | 'producer' | 'consumer';

/**
 * What a span says of itself: operation names, routes, status codes, system names. Never a
 * parameter, a value of a row, a header's value, a URL with its query or a secret.
 */
export type SpanAttributes = Readonly<Record<string, string | number | boolean>>;

/** Another trace's span a span points at (a batch's span at each message's sender). */
export interface SpanLink {
  readonly traceId: string;
  readonly spanId: string;
  readonly sampled: boolean;
}

/** A link to the span a `traceparent` names; undefined when it is not a valid one. */
export function spanLinkOf(traceparent: string | undefined): SpanLink | undefined {
  const parsed = parseTraceparent(traceparent);
  return parsed && { traceId: parsed.traceId, spanId: parsed.spanId, sampled: (parsed.flags & 1) === 1 };
}

/** A finished span of the service's. */
export interface SpanRecord {
  readonly name: string;
  readonly kind: SpanKind;
  /** Its ids: this span's, its parent's, the trace's, and whether the trace is sampled. */
  readonly context: TraceContext;
  /** Milliseconds since the epoch, with a fraction ({@link spanClock}). */
  readonly startTime: number;
  readonly endTime: number;
  readonly attributes?: SpanAttributes;
  readonly links?: readonly SpanLink[];
  /** The work failed (an error answer of 5xx, a thrown statement, a kept record). */
  readonly failed?: boolean;
}

/** Port: where finished spans go. */
export interface SpanRecorder {
  /** Whether spans are exported at all: with false, callers skip even making the record. */
  readonly enabled: boolean;
  record(span: SpanRecord): void;
  /** Sends what is recorded so far; the handler wrappers await it before the invocation ends. */
  flush(): Promise<void>;
}

/** Tracing off: nothing recorded, nothing to send. */
export const noSpanRecorder: SpanRecorder = {
  enabled: false,
  record: () => undefined,
  flush: () => Promise.resolve(),
};

/** One per process (process-wide.ts): the local stack's packaged functions share the stack's. */
const tracing = processWide('span-recorder', () => ({ recorder: noSpanRecorder as SpanRecorder }));

/** This process's recorder: {@link noSpanRecorder} until tracing is on. */
export function spanRecorder(): SpanRecorder {
  return tracing.recorder;
}

/** Puts `recorder` in place for this process (shared/lambda/tracing.ts, tests). */
export function useSpanRecorder(recorder: SpanRecorder): void {
  tracing.recorder = recorder;
}

/** Both recorders told of every span (the local stack's memory and an OTLP exporter), both flushed. */
export function bothRecorders(first: SpanRecorder, second: SpanRecorder): SpanRecorder {
  return {
    enabled: first.enabled || second.enabled,
    record(span) {
      if (first.enabled) first.record(span);
      if (second.enabled) second.record(span);
    },
    flush: () => Promise.all([first.flush(), second.flush()]).then(() => undefined),
  };
}

/** Now, in milliseconds since the epoch with the fraction `performance.now()` gives. */
export const spanClock = (): number => performance.timeOrigin + performance.now();

/**
 * Tells the recorder of `span`, unless its trace is unsampled: a caller's `00` is propagated (the
 * ids still travel) but not exported.
 */
export function recordSpan(span: SpanRecord): void {
  const recorder = tracing.recorder;
  if (!recorder.enabled || !span.context.sampled) return;
  recorder.record(span);
}

/** Whether spans under `parent` would be exported: where the making of a record costs something. */
export function recording(parent: TraceContext | undefined): parent is TraceContext {
  return (parent?.sampled ?? false) && tracing.recorder.enabled;
}
