import { processWide } from '../../shared/core/process-wide.js';
import type { SpanRecord, SpanRecorder } from '../../shared/core/tracing.js';

/** How many spans `npm start` keeps: the last few minutes of a developer's clicking. */
const KEPT = 20_000;

/**
 * `npm start`'s memory of the last spans of its functions (issue 49: a request's whole trace
 * without AWS or a collector): a recorder beside the OTLP exporter, when there is one, read by
 * `GET /_local/traces?traceId=` and `npm run trace -- <trace id>`. One per process, as the
 * packaged functions' copies of the span port share the stack's (process-wide.ts).
 */
const memory = processWide('local-recent-spans', () => ({ spans: [] as SpanRecord[], on: false }));

/** The recorder that keeps the last {@link KEPT} spans; turns the memory on. */
export function recentSpansRecorder(): SpanRecorder {
  memory.on = true;
  return {
    enabled: true,
    record(span) {
      memory.spans.push(span);
      if (memory.spans.length > KEPT * 1.25) memory.spans.splice(0, memory.spans.length - KEPT);
    },
    flush: () => Promise.resolve(),
  };
}

/** The kept spans of `traceId`, by start; undefined when nothing keeps spans (not `npm start`). */
export function recentSpansOf(traceId: string): SpanRecord[] | undefined {
  if (!memory.on) return undefined;
  return memory.spans
    .filter((span) => span.context.traceId === traceId)
    .sort((a, b) => a.startTime - b.startTime);
}
