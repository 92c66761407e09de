import { randomFillSync } from 'node:crypto';

/**
 * W3C Trace Context (CONTRACT 8a): `traceparent` is `version-traceid-parentid-flags`, four fields
 * of lower-case hex. Parsed here rather than with `@opentelemetry/core`'s `parseTraceParent` (the
 * parser of its `W3CTraceContextPropagator`), which passes the same tests but, measured, costs a
 * cold start with tracing off 6.3 ms of CPU, over CONTRACT 8a's 5 ms: in a function's bundle the
 * code it shares with the span exporter's chunk (the OpenTelemetry API) goes into chunks every
 * cold start loads (docs/development.md "Tracing"). The service must read and write it on every
 * request and message whether or not spans are exported, so with tracing off nothing beyond this
 * file is loaded.
 */

/** The header and message attribute names, as W3C writes them (lower case). */
export const TRACEPARENT = 'traceparent';
export const TRACESTATE = 'tracestate';

/** A caller's `traceparent`, once read. */
export interface TraceParent {
  /** 32 lower-case hex digits, not all zero. */
  readonly traceId: string;
  /** The caller's span: 16 lower-case hex digits, not all zero. */
  readonly spanId: string;
  /** Bit 0 is `sampled`: a caller's `00` means its trace is propagated, not recorded. */
  readonly flags: number;
}

/** A span of the service's, in the trace of whatever caused it. */
export interface TraceContext {
  readonly traceId: string;
  /** This span's id: a child's parent id. */
  readonly spanId: string;
  /** The span it continues (the caller's, the sender's), when there was one. */
  readonly parentSpanId?: string;
  /** The caller's `sampled` flag, or true for a trace started here. */
  readonly sampled: boolean;
  /** `00-<trace id>-<span id>-<flags>`: what an answer, a message or a POST carries. */
  readonly traceparent: string;
  /** The caller's `tracestate`, passed on unchanged. */
  readonly tracestate?: string;
}

const VERSION_00_LENGTH = 55;
const FIELDS = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ALL_ZERO = /^0+$/;
const SAMPLED = 0x01;
/** Trace Context Level 2's `random-trace-id`: kept, as it describes the trace id, which is kept. */
const RANDOM_TRACE_ID = 0x02;

/**
 * A `traceparent` header as W3C Trace Context reads it, or undefined for anything malformed: an
 * unknown version (`ff` is never valid) is read by its first four fields, as the specification
 * says a newer version must stay readable so; upper-case hex and all-zero ids are refused.
 */
export function parseTraceparent(header: string | undefined): TraceParent | undefined {
  if (header === undefined) return undefined;
  const value = header.trim();
  if (value.length < VERSION_00_LENGTH) return undefined;
  const version = value.slice(0, 2);
  if (
    version === '00'
      ? value.length !== VERSION_00_LENGTH
      : value.length > VERSION_00_LENGTH && value[VERSION_00_LENGTH] !== '-'
  ) {
    return undefined;
  }
  const found = FIELDS.exec(value.slice(0, VERSION_00_LENGTH));
  if (!found || found[1] === 'ff') return undefined;
  const [, , traceId, spanId, flags] = found as unknown as [string, string, string, string, string];
  if (ALL_ZERO.test(traceId) || ALL_ZERO.test(spanId)) return undefined;
  return { traceId, spanId, flags: Number.parseInt(flags, 16) };
}

/** Random ids from one buffer, refilled when used up: one system call per 32 ids. */
const pool = Buffer.alloc(512);
let poolOffset = pool.length;
function randomHex(bytes: number): string {
  while (true) {
    if (poolOffset + bytes > pool.length) {
      randomFillSync(pool);
      poolOffset = 0;
    }
    const hex = pool.toString('hex', poolOffset, poolOffset + bytes);
    poolOffset += bytes;
    // An all-zero id is invalid; 2^-64 at worst, but a header we send must never be refused.
    if (!ALL_ZERO.test(hex)) return hex;
  }
}

const hex2 = (flags: number) => flags.toString(16).padStart(2, '0');

function span(
  traceId: string,
  parentSpanId: string | undefined,
  flags: number,
  tracestate?: string,
): TraceContext {
  const spanId = randomHex(8);
  return {
    traceId,
    spanId,
    ...(parentSpanId === undefined ? {} : { parentSpanId }),
    sampled: (flags & SAMPLED) === SAMPLED,
    traceparent: `00-${traceId}-${spanId}-${hex2(flags)}`,
    ...(tracestate ? { tracestate } : {}),
  };
}

/**
 * The service's span for work caused by `incoming` (a request's headers, a message's attributes):
 * a child of the caller's span in the caller's trace, its `sampled` flag and `tracestate` kept;
 * without a valid `traceparent`, a new sampled trace (and the caller's `tracestate`, which
 * belongs to the trace it came with, dropped).
 */
export function continueTrace(incoming: {
  readonly traceparent?: string;
  readonly tracestate?: string;
}): TraceContext {
  const parent = parseTraceparent(incoming.traceparent);
  if (!parent) return startTrace();
  // Version 00 knows only these bits; any other a newer version set is not ours to pass on.
  const flags = parent.flags & (SAMPLED | RANDOM_TRACE_ID);
  const tracestate = incoming.tracestate?.trim();
  return span(parent.traceId, parent.spanId, flags, tracestate);
}

/** A new trace, sampled, its trace id random. */
export function startTrace(): TraceContext {
  return span(randomHex(16), undefined, SAMPLED);
}

/** A span within `parent`'s trace whose parent is `parent` (a queue send, an outgoing POST). */
export function childSpan(parent: TraceContext): TraceContext {
  const flags = parseTraceparent(parent.traceparent)?.flags ?? SAMPLED;
  return span(parent.traceId, parent.spanId, flags, parent.tracestate);
}

/** The headers (or message attributes) that carry `trace` to whatever it calls next. */
export function traceHeaders(trace: TraceContext): Record<string, string> {
  return trace.tracestate
    ? { [TRACEPARENT]: trace.traceparent, [TRACESTATE]: trace.tracestate }
    : { [TRACEPARENT]: trace.traceparent };
}

const XRAY_ROOT = /(?:^|;)\s*Root=1-([0-9a-f]{8})-([0-9a-f]{24})\s*(?:;|$)/;
const XRAY_PARENT = /(?:^|;)\s*Parent=([0-9a-f]{16})\s*(?:;|$)/;
const XRAY_SAMPLED = /(?:^|;)\s*Sampled=([01])\s*(?:;|$)/;

/**
 * An X-Ray trace header (SQS's `AWSTraceHeader` system attribute) as a `traceparent`: X-Ray's
 * `1-<8 hex time>-<24 hex>` root is a W3C trace id of the same 32 digits, which is how AWS's own
 * OpenTelemetry propagator maps it. Undefined without a root and a parent.
 */
export function traceparentOfXRay(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const root = XRAY_ROOT.exec(header);
  const parent = XRAY_PARENT.exec(header);
  if (!root || !parent) return undefined;
  const sampled = XRAY_SAMPLED.exec(header)?.[1] ?? '1';
  return `00-${root[1]}${root[2]}-${parent[1]}-0${sampled}`;
}
