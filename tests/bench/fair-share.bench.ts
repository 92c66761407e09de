import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { tsqlAvailable } from '../../infra/local/tsql-engine.js';
import { resetSettings } from '../../shared/config/settings.js';
import { median, record } from './measure.js';

const AUTH = `Basic ${Buffer.from('demo:demo-password').toString('base64')}`;
const RUNS = 1000;
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

/**
 * The cost of fairness (issues 29 and 38), on both databases: the same request (getRowsCount of
 * SUBJECT over HTTP, on the local stack) counted in the shared store (dynalite in a thread of its
 * own, DynamoDB's wire protocol: one conditional write before the work; the slot goes back after
 * the answer has left, as in Lambda) against counted in this process only (the same limiter
 * without its store), alternating request by request, one client after another. Goals (CONTRACT
 * section 2): at most 2 ms added at p50, 5 ms at p99.
 */
export default async function fairShare() {
  for (const database of ['embedded', ...(tsqlAvailable() ? ['tsql' as const] : [])] as const) {
    const stack = await startLocalStack({
      port: 0,
      database,
      // Over neither limit: only what counting costs is measured.
      env: { TENANT_REQUESTS_PER_SECOND: '10000', TENANT_CONCURRENT_REQUESTS: '9' },
    });
    try {
      await measure(stack, database);
    } finally {
      await stack.stop();
    }
  }
}

async function measure(stack: LocalStack, database: 'embedded' | 'tsql') {
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
    for (let i = 0; i < 30; i++) {
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
    const on = database === 'tsql' ? 'T-SQL engine' : 'embedded database';
    for (const [p, goal] of [
      [50, 2],
      [99, 5],
    ] as const) {
      record({
        id: `fairShare.${database}.addedLatency.p${p}`,
        subject: `getRowsCount (${on}) counted in the shared store (dynalite), p${p}`,
        baseline: `the same request counted in process only, p${p}`,
        unit: 'ms',
        subjectMedian: percentile(shared, p),
        baselineMedian: percentile(local, p),
        value: percentile(shared, p) - percentile(local, p),
        kind: 'difference',
        goal,
        note:
          p === 50
            ? `medians ${median(shared).toFixed(2)} / ${median(local).toFixed(2)} ms over ${RUNS} runs each`
            : undefined,
      });
    }
  } finally {
    process.env.TENANT_LIMITS_TABLE = table;
    resetSettings();
  }
}
