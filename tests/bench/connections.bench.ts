import { type ChildProcess, fork } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sql from 'mssql';
import { functionPoolSettings } from '../../infra/local/function-instances.js';
import { startTsqlDemo, tsqlAvailable } from '../../infra/local/tsql-engine.js';
import { type ConnectionPoolSettings, poolConfig } from '../../shared/adapters/mssql/connection.js';
import { createMssqlDatabase } from '../../shared/adapters/mssql/index.js';
import type { Database } from '../../shared/core/database.js';
import { median, record, report, sampleInterleaved } from './measure.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const INSTANCE = join(HERE, 'function-instance-process.ts');
/** Function instances (processes) at once, requests at once in each, seconds of load, rounds. */
const PROCESSES = Number(process.env.CONNECTIONS_BENCH_PROCESSES ?? 6);
const CONCURRENCY = Number(process.env.CONNECTIONS_BENCH_CONCURRENCY ?? 8);
const SECONDS = Number(process.env.CONNECTIONS_BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.CONNECTIONS_BENCH_ROUNDS ?? 3);

interface Setup {
  readonly key: string;
  readonly label: string;
  /** The environment of each process beyond the bench's own. */
  readonly env: Record<string, string>;
  /** The most connections one process may open: N × this is the formula's figure. */
  readonly poolSize: number;
}

interface Outcome {
  /** The most sessions the server counted from the processes at once, cold starts included. */
  readonly peakSessions: number;
  /** 200 answers per second, all processes together: the first SECONDS of load (pools growing). */
  readonly coldRequestsPerSecond: number;
  /** The same over the next SECONDS, the pools as the load made them. */
  readonly requestsPerSecond: number;
  readonly busy: number;
  readonly other: number;
  readonly firstOther?: string;
}

interface Counts {
  readonly ok: number;
  readonly busy: number;
  readonly other: number;
  readonly firstOther?: string;
}

/** `connectionString` with its sessions named `name` on the server (program_name). */
function named(connectionString: string, name: string): string {
  return /^(mssql|sqlserver):\/\//i.test(connectionString)
    ? `${connectionString}${connectionString.includes('?') ? '&' : '?'}appName=${encodeURIComponent(name)}`
    : `${connectionString.replace(/;\s*$/, '')};Application Name=${name}`;
}

function message<T>(child: ChildProcess, key: string, timeoutMs: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no "${key}" from pid ${child.pid} within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const onMessage = (value: Record<string, unknown>) => {
      if (!(key in value)) return;
      clearTimeout(timer);
      child.off('message', onMessage);
      resolve(value as T);
    };
    child.on('message', onMessage);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`pid ${child.pid} exited (${code}) before "${key}"`));
    });
  });
}

/**
 * N cold function instances at once, each asked for CONCURRENCY requests at a time for SECONDS,
 * while the server's own session count of their application name is read every 20 ms.
 */
async function runOnce(
  setup: Setup,
  connectionString: string,
  observer: Database,
  round: number,
): Promise<Outcome> {
  const name = `conn-bench-${setup.key}-${round}-${process.pid}`;
  let peak = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const [row] = await observer.query(
        'SELECT COUNT(*) AS n FROM sys.dm_exec_sessions WHERE program_name = @p1',
        [name],
      );
      peak = Math.max(peak, Number(row?.n ?? 0));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  const children = Array.from({ length: PROCESSES }, () =>
    fork(INSTANCE, [], {
      execArgv: ['--import', 'tsx', '--disable-warning=ExperimentalWarning'],
      env: {
        ...process.env,
        LOG_LEVEL: 'ERROR',
        BENCH_CONNECTION_STRING: named(connectionString, name),
        ...setup.env,
      },
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    }),
  );
  try {
    const ready = await Promise.all(
      children.map((child) =>
        message<{ ready: boolean; status: number; body: string }>(child, 'ready', 180_000),
      ),
    );
    const failed = ready.find((answer) => !answer.ready);
    if (failed) throw new Error(`a cold instance's first request failed: ${failed.status} ${failed.body}`);
    /** Every process under load for SECONDS at once; their counts. */
    const load = async (): Promise<Counts[]> => {
      const results = Promise.all(
        children.map((child) => message<{ counts: Counts }>(child, 'counts', SECONDS * 1000 + 60_000)),
      );
      for (const child of children)
        child.send({ run: { concurrency: CONCURRENCY, durationMs: SECONDS * 1000 } });
      return (await results).map((result) => result.counts);
    };
    const cold = await load();
    const warm = await load();
    const both = [...cold, ...warm];
    const rate = (counts: Counts[]) => counts.reduce((sum, c) => sum + c.ok, 0) / SECONDS;
    return {
      peakSessions: peak,
      coldRequestsPerSecond: rate(cold),
      requestsPerSecond: rate(warm),
      busy: both.reduce((sum, c) => sum + c.busy, 0),
      other: both.reduce((sum, c) => sum + c.other, 0),
      firstOther: both.find((c) => c.firstOther)?.firstOther,
    };
  } finally {
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null) return resolve();
            const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
            child.once('exit', () => {
              clearTimeout(kill);
              resolve();
            });
            child.send({ exit: true });
          }),
      ),
    );
    sampling = false;
    await sampler;
  }
}

const CHECK_RUNS = 300;

/**
 * What checking a connection costs each statement: the same statement through a pool of one
 * connection checked by its socket (the service's) and through one checked with a `SELECT 1`
 * (the driver's default), alternating in one process, so that the machine's load falls on both.
 */
async function connectionChecks(connectionString: string, settings: ConnectionPoolSettings) {
  const config = poolConfig({ connectionString }, { ...settings, maxConnections: 1 });
  const socket = await new sql.ConnectionPool(config).connect();
  const query = await new sql.ConnectionPool({ ...config, validateConnection: true }).connect();
  try {
    const statement = 'SELECT COUNT(*) AS n FROM dbo.SUBJECT';
    return await sampleInterleaved(
      () => socket.request().query(statement),
      () => query.request().query(statement),
      CHECK_RUNS,
      20,
    );
  } finally {
    await Promise.all([socket.close(), query.close()]);
  }
}

/**
 * The pool bound under load on the T-SQL engine: PROCESSES cold instances of getRowsCount, each a
 * process of its own asked for more requests at once than its pool holds, with the function's pool
 * (serverless.yml) against the pool as it was before issue 18, in the same run, alternating. The
 * server's own session count against the formula's figure (processes × pool), and the throughput.
 */
export default async function connectionsBench(): Promise<void> {
  if (!tsqlAvailable()) {
    console.log('T-SQL engine not found (TSQL_ENGINE_DIR) and no MSSQL_URL: connections bench not run');
    return;
  }
  const pool = functionPoolSettings('dataGetRowsCount');
  const functionPool: Record<string, string> = {
    DB_POOL_MAX: String(pool.maxConnections),
    DB_POOL_ACQUIRE_TIMEOUT_MS: String(pool.acquireTimeoutMs),
    DB_POOL_IDLE_TIMEOUT_MS: String(pool.idleTimeoutMs),
  };
  const setups: Setup[] = [
    {
      key: 'function',
      label: `the function's pool (DB_POOL_MAX=${pool.maxConnections}, socket check)`,
      env: functionPool,
      poolSize: pool.maxConnections,
    },
    {
      key: 'before',
      label: 'the pool before issue 18 (the driver defaults: 10, SELECT 1 check)',
      env: { BENCH_POOL: 'before' },
      poolSize: 10,
    },
    {
      key: 'pool-10',
      label: 'DB_POOL_MAX=10 (socket check)',
      env: { ...functionPool, DB_POOL_MAX: '10' },
      poolSize: 10,
    },
  ];
  const demo = await startTsqlDemo();
  // The demo database: an engine copy of its own, or a new database on the server of MSSQL_URL.
  const connectionString = demo.url;
  const observer = createMssqlDatabase({ connectionString });
  const outcomes = new Map<string, Outcome[]>(setups.map((setup) => [setup.key, []]));
  let checks: [number[], number[]];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      // Each round in another order, so that none always runs on the machine as the others left it.
      const order = setups.map((_, i) => setups[(i + round) % setups.length]!);
      for (const setup of order) {
        const outcome = await runOnce(setup, connectionString, observer, round);
        outcomes.get(setup.key)!.push(outcome);
        console.log(
          `  round ${round + 1}, ${setup.label}: peak ${outcome.peakSessions} sessions (formula ${PROCESSES} × ${setup.poolSize} = ${PROCESSES * setup.poolSize}), ${outcome.coldRequestsPerSecond.toFixed(0)} requests/s from cold, then ${outcome.requestsPerSecond.toFixed(0)}` +
            (outcome.busy ? `, ${outcome.busy} busy 503s` : '') +
            (outcome.other ? `, ${outcome.other} other answers (${outcome.firstOther})` : ''),
        );
      }
    }
    checks = await connectionChecks(connectionString, pool);
  } finally {
    await observer.close();
    await demo.stop();
  }

  const of = (key: string, pick: (outcome: Outcome) => number) =>
    outcomes
      .get(key)!
      .map(pick)
      .sort((a, b) => a - b);
  const peak = (key: string) => median(of(key, (outcome) => outcome.peakSessions));
  const rate = (key: string) => median(of(key, (outcome) => outcome.requestsPerSecond));
  const coldRate = (key: string) => median(of(key, (outcome) => outcome.coldRequestsPerSecond));
  const [fn, before, pool10] = setups as [Setup, Setup, Setup];
  const setting = `${PROCESSES} processes × ${CONCURRENCY} requests at once, ${SECONDS} s from cold then ${SECONDS} s measured, ${ROUNDS} rounds`;
  const formula = PROCESSES * fn.poolSize;
  record({
    id: 'connections.peakSessionsVsFormula',
    subject: `peak sessions, ${fn.label}`,
    baseline: `the formula (${PROCESSES} × ${fn.poolSize})`,
    unit: 'sessions',
    subjectMedian: peak(fn.key),
    baselineMedian: formula,
    value: Math.max(...of(fn.key, (outcome) => outcome.peakSessions)) / formula,
    kind: 'ratio',
    goal: 1,
    note: `${setting}; the highest peak of every round over the formula's figure`,
  });
  record({
    id: 'connections.peakSessionsVsBefore',
    subject: `peak sessions, ${fn.label}`,
    baseline: before.label,
    unit: 'sessions',
    subjectMedian: peak(fn.key),
    baselineMedian: peak(before.key),
    value: peak(fn.key) / peak(before.key),
    kind: 'ratio',
    note: `${setting}; before: up to ${PROCESSES} × ${before.poolSize} = ${PROCESSES * before.poolSize} by its formula, ${PROCESSES} × ${CONCURRENCY} asked for`,
  });
  record({
    id: 'connections.throughputVsBefore',
    subject: `requests/s, ${fn.label}`,
    baseline: before.label,
    unit: '/s',
    subjectMedian: rate(fn.key),
    baselineMedian: rate(before.key),
    value: rate(fn.key) / rate(before.key),
    kind: 'ratio',
    note: `${setting}; getRowsCount of SUBJECT, 200s only, the second ${SECONDS} s (above 1: more with the bound)`,
  });
  record({
    id: 'connections.coldThroughputVsBefore',
    subject: `requests/s in the first ${SECONDS} s from cold, ${fn.label}`,
    baseline: before.label,
    unit: '/s',
    subjectMedian: coldRate(fn.key),
    baselineMedian: coldRate(before.key),
    value: coldRate(fn.key) / coldRate(before.key),
    kind: 'ratio',
    note: `${setting}; every connection a pool opens is a login while the load runs`,
  });
  record({
    id: 'connections.throughputVsPool10',
    subject: `requests/s, ${fn.label}`,
    baseline: pool10.label,
    unit: '/s',
    subjectMedian: rate(fn.key),
    baselineMedian: rate(pool10.key),
    value: rate(fn.key) / rate(pool10.key),
    kind: 'ratio',
    note: `${setting}; what the smaller pool alone costs or gains (peak sessions ${peak(fn.key)} against ${peak(pool10.key)})`,
  });
  const [socketCheck, queryCheck] = checks;
  report(
    'statement through a pool of 1, checked by its socket',
    socketCheck,
    'the same with the SELECT 1 check before it',
    queryCheck,
    {
      id: 'connections.socketCheckVsQueryCheck',
      note: `getRowsCount's COUNT(*) of SUBJECT, one at a time, ${CHECK_RUNS} each, alternating, in this process: the round trip the socket check saves`,
    },
  );
}
