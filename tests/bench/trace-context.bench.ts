import { startLocalStack } from '../../infra/local/stack.js';
import { continueTrace, traceHeaders } from '../../shared/core/trace-context.js';
import { median, p95, record, sampleInterleavedCpu } from './measure.js';

const BASIC = `Basic ${Buffer.from('demo:demo-password').toString('base64')}`;

/**
 * Trace context (CONTRACT 8a), whose goal is a warm request at most 1 ms more at p50:
 * - what a request's trace context costs in itself (its span continued from the caller's header,
 *   the answer's header, the trace id on a line), per request, against doing nothing;
 * - a warm read through the local stack (embedded database) with a caller's `traceparent` and
 *   `tracestate`, against the same read without (a trace started): CPU of the whole process.
 * Propagation only, with span export off: span-export.bench.ts measures the export.
 */
export default async function traceContextBench(): Promise<void> {
  const perRequest = (iterations: number, work: (n: number) => unknown) => {
    const started = performance.now();
    let sink = 0;
    for (let n = 0; n < iterations; n++) sink += Number(Boolean(work(n)));
    if (sink < 0) throw new Error('unreachable');
    return (performance.now() - started) / iterations;
  };
  const caller = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  const traced: number[] = [];
  const bare: number[] = [];
  for (let round = 0; round < 21; round++) {
    traced.push(
      perRequest(20_000, () => {
        const trace = continueTrace({ traceparent: caller, tracestate: 'vendor=x' });
        return { ...traceHeaders(trace), line: { traceId: trace.traceId } };
      }),
    );
    bare.push(perRequest(20_000, (n) => ({ n })));
  }
  traced.sort((a, b) => a - b);
  bare.sort((a, b) => a - b);
  record({
    id: 'traceContext.perRequest',
    subject: "one request's trace context (continued, answer header, log field)",
    baseline: 'nothing',
    unit: 'ms',
    subjectMedian: median(traced),
    baselineMedian: median(bare),
    value: median(traced) - median(bare),
    kind: 'difference',
    goal: 1,
    note: `${((median(traced) - median(bare)) * 1000).toFixed(2)} µs per request`,
  });

  const runs = Number(process.env.BENCH_TRACE_RUNS ?? 200);
  const stack = await startLocalStack({
    port: 0,
    database: 'embedded',
    env: { TENANT_REQUESTS_PER_SECOND: '10000' },
  });
  try {
    const url = `${stack.url}/demo/JsonAPI/Data/getRowsCount/SUBJECT`;
    const call = async (headers: Record<string, string>) => {
      const response = await fetch(url, { headers: { authorization: BASIC, ...headers } });
      if (response.status !== 200) throw new Error(`${response.status}: ${await response.text()}`);
      await response.arrayBuffer();
    };
    const [withCaller, without] = await sampleInterleavedCpu(
      () => call({ traceparent: caller, tracestate: 'vendor=x' }),
      () => call({}),
      runs,
      10,
    );
    record({
      id: 'traceContext.warmCallerTraceVsNone',
      subject: "getRowsCount with a caller's traceparent (CPU)",
      baseline: 'without one',
      unit: 'ms',
      subjectMedian: median(withCaller),
      baselineMedian: median(without),
      subjectP95: p95(withCaller),
      baselineP95: p95(without),
      value: median(withCaller) - median(without),
      kind: 'difference',
      goal: 1,
    });
  } finally {
    await stack.stop();
  }
}
