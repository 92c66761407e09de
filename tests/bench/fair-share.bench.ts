import { startLocalStack } from '../../infra/local/stack.js';
import { resetSettings } from '../../shared/config/settings.js';
import { median, record } from './measure.js';

const AUTH = `Basic ${Buffer.from('demo:demo-password').toString('base64')}`;
const RUNS = 400;
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

/**
 * Issue 29's cost of fairness, locally: the same request (getRowsCount of SUBJECT over HTTP on the
 * embedded database) counted in the shared store (dynalite, DynamoDB's wire protocol: a conditional
 * write before the work, one after) against counted in this process only (no round trip: the
 * limiter without its store), alternating request by request. Goal: ≤ 5 ms added at p50.
 */
export default async function fairShare() {
  const stack = await startLocalStack({
    ...(process.env.BENCH_DYNAMO ? {} : {}),
    port: 0,
    env: {
      TENANT_REQUESTS_PER_SECOND: '10000',
      TENANT_CONCURRENT_REQUESTS: '9',
      ...(process.env.BENCH_DYNAMO ? { AWS_ENDPOINT_URL_DYNAMODB: process.env.BENCH_DYNAMO } : {}),
    },
  });
  const table = process.env.TENANT_LIMITS_TABLE!;
  const url = `${stack.url}/demo/JsonAPI/Data/getRowsCount/SUBJECT`;
  const timed = async (withStore: boolean) => {
    if (withStore) process.env.TENANT_LIMITS_TABLE = table;
    else delete process.env.TENANT_LIMITS_TABLE;
    resetSettings();
    const started = performance.now();
    const response = await fetch(url, { headers: { authorization: AUTH } });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`getRowsCount: ${response.status}`);
    return performance.now() - started;
  };
  try {
    for (let i = 0; i < 20; i++) {
      await timed(true);
      await timed(false);
    }
    const shared: number[] = [];
    const local: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      shared.push(await timed(true));
      local.push(await timed(false));
    }
    shared.sort((a, b) => a - b);
    local.sort((a, b) => a - b);
    for (const [p, goal] of [
      [50, 5],
      [99, undefined],
    ] as const) {
      record({
        id: `fairShare.addedLatency.p${p}`,
        subject: `getRowsCount counted in the shared store (dynalite), p${p}`,
        baseline: `the same request counted in process only, p${p}`,
        unit: 'ms',
        subjectMedian: percentile(shared, p),
        baselineMedian: percentile(local, p),
        value: percentile(shared, p) - percentile(local, p),
        kind: 'difference',
        ...(goal === undefined ? {} : { goal }),
        note:
          p === 50
            ? `medians ${median(shared).toFixed(2)} / ${median(local).toFixed(2)} ms over ${RUNS} runs each`
            : undefined,
      });
    }
  } finally {
    process.env.TENANT_LIMITS_TABLE = table;
    resetSettings();
    await stack.stop();
  }
}
