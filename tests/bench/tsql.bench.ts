import { type LocalDatabaseKind, localDatabaseKind } from '../../infra/local/demo-database.js';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { prepareTsqlDemo, startTsqlDemo, tsqlAvailable } from '../../infra/local/tsql-engine.js';
import { envelope, signedCall } from '../support/web-api.js';
import { pagingFigures } from './data-api.bench.js';
import { median, report, sample } from './measure.js';
import { webApiFigures } from './web-api.bench.js';

const AUTH = `Basic ${Buffer.from('demo:demo-password').toString('base64')}`;
const RUNS = 30;

/** getDataPaginate of 1,000 DOKUMENT rows and a signed Web API getData (vltyp 1001) on one stack. */
async function measure(stack: LocalStack) {
  let i = 0;
  const from = () => 1 + ((i++ * 7919) % 99) * 1000;
  const page = await sample(async () => {
    const response = await fetch(
      `${stack.url}/demo/JsonAPI/Data/getDataPaginate/DOKUMENT?fromRow=${from()}&rows=1000`,
      { headers: { authorization: AUTH } },
    );
    const body = (await response.json()) as { DOKUMENT: unknown[] };
    if (body.DOKUMENT.length !== 1000) throw new Error('short page');
  }, RUNS);
  let n = 0;
  const call = await sample(async () => {
    // Every call differs (a parameter the procedure ignores), so none is a replay.
    const signed = signedCall(envelope(1001, [{ nazev: 'a', n: n++ }]));
    const response = await fetch(`${stack.url}/demo/WebAPI/getData`, {
      method: 'POST',
      headers: signed.headers,
      body: signed.body,
    });
    const body = (await response.json()) as { vlResult: number; data: unknown[] };
    if (response.status !== 200 || body.vlResult !== 1 || body.data.length === 0) {
      throw new Error(`getData failed: ${response.status}`);
    }
  }, RUNS);
  return { page, call };
}

async function onStack(database: LocalDatabaseKind) {
  const started = performance.now();
  const stack = await startLocalStack({ port: 0, database, env: { TENANT_REQUESTS_PER_SECOND: '10000' } });
  const startMs = performance.now() - started;
  try {
    return { startMs, ...(await measure(stack)) };
  } finally {
    await stack.stop();
  }
}

/**
 * The same two calls on the T-SQL engine and on the embedded database, in the same run: the
 * embedded stack is the baseline. Also the engine's own start and the demo preparation.
 */
export default async function tsqlBench(): Promise<void> {
  if (!tsqlAvailable()) {
    console.log('T-SQL engine not found (TSQL_ENGINE_DIR) and no MSSQL_URL: tsql bench not run');
    return;
  }
  localDatabaseKind(); // refuses a bad LOCAL_DATABASE early
  const prepared = await prepareTsqlDemo();
  console.log(
    prepared.builtInMs
      ? `T-SQL demo preparation: built now in ${prepared.builtInMs.toFixed(0)} ms`
      : 'T-SQL demo preparation: reused (delete .data/tsql-engine/demo-* to measure a build)',
  );
  const starts: number[] = [];
  for (let run = 0; run < 3; run++) {
    const started = performance.now();
    const demo = await startTsqlDemo();
    starts.push(performance.now() - started);
    await demo.stop();
  }
  console.log(
    `T-SQL engine start on a copy of the prepared demo (copy, start, first login): median ${median(starts.sort((a, b) => a - b)).toFixed(0)} ms of ${starts.map((s) => s.toFixed(0)).join(', ')}`,
  );
  const embedded = await onStack('embedded');
  const tsql = await onStack('tsql');
  console.log(
    `local stack start: T-SQL ${tsql.startMs.toFixed(0)} ms | embedded ${embedded.startMs.toFixed(0)} ms`,
  );
  report(
    'getDataPaginate 1000 rows via HTTP, T-SQL engine',
    tsql.page,
    'same on the embedded database',
    embedded.page,
  );
  report(
    'signed Web API getData (vltyp 1001), T-SQL engine',
    tsql.call,
    'same on the embedded database',
    embedded.call,
  );

  // The speed goals' figures on the engine: what the embedded database is held to, measured here
  // for the closing note (no goal: the engine runs as a local process, not as SQL Server would).
  const stack = await startLocalStack({ port: 0, database: 'tsql' });
  try {
    const on = { id: 'tsql', label: 'T-SQL engine' };
    await pagingFigures(stack, on);
    await webApiFigures(stack, on);
  } finally {
    await stack.stop();
  }
}
