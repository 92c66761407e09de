import { describe, expect, it } from 'vitest';
import {
  childSpan,
  continueTrace,
  parseTraceparent,
  startTrace,
  traceHeaders,
  traceparentOfXRay,
} from '../../shared/core/trace-context.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';
const CALLER = `00-${TRACE_ID}-${PARENT}-01`;
const TRACEPARENT_SHAPE = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

describe('Function: parseTraceparent', () => {
  it('reads the W3C example', () => {
    expect(parseTraceparent(CALLER)).toEqual({ traceId: TRACE_ID, spanId: PARENT, flags: 1 });
  });

  it.each([
    ['absent', undefined],
    ['empty', ''],
    ['garbage', 'not a trace'],
    ['version ff', `ff-${TRACE_ID}-${PARENT}-01`],
    ['all-zero trace id', `00-${'0'.repeat(32)}-${PARENT}-01`],
    ['all-zero span id', `00-${TRACE_ID}-${'0'.repeat(16)}-01`],
    ['upper-case hex', `00-${TRACE_ID.toUpperCase()}-${PARENT}-01`],
    ['version 00 with more', `${CALLER}-extra`],
    ['a short trace id', `00-${TRACE_ID.slice(1)}-${PARENT}-01`],
    ['flags of one digit', `00-${TRACE_ID}-${PARENT}-1`],
    ['two headers joined', `${CALLER},${CALLER}`],
    ['a later version with no dash after the flags', `01-${TRACE_ID}-${PARENT}-01x`],
  ])('refuses %s', (_name, header) => {
    expect(parseTraceparent(header)).toBeUndefined();
  });

  it('reads a later version by its first four fields', () => {
    expect(parseTraceparent(`cc-${TRACE_ID}-${PARENT}-01-what-comes-later`)).toEqual({
      traceId: TRACE_ID,
      spanId: PARENT,
      flags: 1,
    });
  });

  it('allows the spaces around a header value', () => {
    expect(parseTraceparent(` ${CALLER}\t`)?.traceId).toBe(TRACE_ID);
  });
});

describe('Function: continueTrace', () => {
  it("continues the caller's trace as a child of its span, tracestate unchanged", () => {
    const trace = continueTrace({
      traceparent: CALLER,
      tracestate: 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE',
    });
    expect(trace.traceId).toBe(TRACE_ID);
    expect(trace.parentSpanId).toBe(PARENT);
    expect(trace.spanId).not.toBe(PARENT);
    expect(trace.sampled).toBe(true);
    expect(trace.traceparent).toBe(`00-${TRACE_ID}-${trace.spanId}-01`);
    expect(trace.tracestate).toBe('rojo=00f067aa0ba902b7,congo=t61rcWkgMzE');
  });

  it("honours the caller's unsampled flag", () => {
    const trace = continueTrace({ traceparent: `00-${TRACE_ID}-${PARENT}-00` });
    expect(trace.sampled).toBe(false);
    expect(trace.traceparent.endsWith('-00')).toBe(true);
  });

  it('writes version 00 for a later version, keeping only the flags version 00 knows', () => {
    const trace = continueTrace({ traceparent: `cc-${TRACE_ID}-${PARENT}-ff-later` });
    expect(trace.traceparent).toBe(`00-${TRACE_ID}-${trace.spanId}-03`);
  });

  it('starts a new sampled trace for a malformed header, and drops its tracestate', () => {
    const trace = continueTrace({ traceparent: `00-${'0'.repeat(32)}-${PARENT}-01`, tracestate: 'rojo=1' });
    expect(trace.traceparent).toMatch(TRACEPARENT_SHAPE);
    expect(trace.traceId).not.toBe('0'.repeat(32));
    expect(trace.parentSpanId).toBeUndefined();
    expect(trace.sampled).toBe(true);
    expect(trace.tracestate).toBeUndefined();
    expect(parseTraceparent(trace.traceparent)).toBeDefined();
  });

  it('gives each span an id of its own', () => {
    const ids = new Set(Array.from({ length: 1000 }, () => continueTrace({ traceparent: CALLER }).spanId));
    expect(ids.size).toBe(1000);
  });
});

describe('Function: childSpan', () => {
  it("is in its parent's trace, its parent the parent's span, flags and tracestate kept", () => {
    const parent = continueTrace({ traceparent: `00-${TRACE_ID}-${PARENT}-00`, tracestate: 'a=b' });
    const child = childSpan(parent);
    expect(child.traceId).toBe(TRACE_ID);
    expect(child.parentSpanId).toBe(parent.spanId);
    expect(child.spanId).not.toBe(parent.spanId);
    expect(child.sampled).toBe(false);
    expect(traceHeaders(child)).toEqual({ traceparent: child.traceparent, tracestate: 'a=b' });
  });

  it('carries no tracestate where there is none', () => {
    expect(Object.keys(traceHeaders(childSpan(startTrace())))).toEqual(['traceparent']);
  });
});

describe('Function: traceparentOfXRay', () => {
  it("reads SQS's AWSTraceHeader as the traceparent of the same trace", () => {
    expect(
      traceparentOfXRay('Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0'),
    ).toBe('00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-00');
  });

  it.each([undefined, '', 'Root=1-5759e988-bd862e3fe1be46a994272793', 'Parent=53995c3f42cd8ad8'])(
    'gives nothing for %s',
    (header) => {
      expect(traceparentOfXRay(header)).toBeUndefined();
    },
  );
});
