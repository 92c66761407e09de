import type { LocalDatabaseKind } from '../../infra/local/demo-database.js';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { tsqlAvailable } from '../../infra/local/tsql-engine.js';
import { median, record, report } from './measure.js';

const AUTH = `Basic ${Buffer.from('demo:demo-password').toString('base64')}`;
const SYNC_RUNS = 30;
const UPDATE_RUNS = 7;
const wall = async (fn: () => Promise<unknown>) => {
  const start = performance.now();
  await fn();
  return performance.now() - start;
};

async function json(
  stack: LocalStack,
  path: string,
): Promise<{ body: Record<string, unknown[]>; link: string }> {
  const response = await fetch(`${stack.url}${path}`, { headers: { authorization: AUTH } });
  if (response.status !== 200) throw new Error(`${path}: ${response.status}`);
  return {
    body: (await response.json()) as Record<string, unknown[]>,
    link: response.headers.get('link') ?? '',
  };
}
const target = (link: string) => /^<([^>]+)>; rel="(next|sync)"$/.exec(link)!;

/**
 * CONTRACT 4b's costs on one stack: (1) a sync of DOKUMENT (100,000 rows) that answers 10 changes
 * against a getDataPaginate of 10 rows, alternating, each sync preceded (untimed) by the ERP's
 * update of 10 rows; (2) the ERP's own update of 10,000 DOKUMENT rows with recording on (the
 * trigger writes 10,000 change rows) against the same update with the trigger disabled.
 */
async function onStack(database: LocalDatabaseKind, label: string) {
  const stack = await startLocalStack({ port: 0, database });
  const tsql = database === 'tsql';
  const q = (name: string) => (tsql ? `[${name}]` : `"${name}"`);
  const dokument = `dbo.${q('DOKUMENT')}`;
  const run = (sql: string) => stack.database.query(sql);
  try {
    // A sync token of DOKUMENT at its current state: the first pages read in 5,000s (inline).
    let next = '/demo/JsonAPI/Data/getChanges/DOKUMENT?rows=5000';
    for (;;) {
      const { link } = await json(stack, next);
      const [, path, rel] = target(link);
      next = path!;
      if (rel === 'sync') break;
    }
    const syncTimes: number[] = [];
    const pageTimes: number[] = [];
    for (let i = 0; i < SYNC_RUNS + 3; i++) {
      const first = 1 + ((i * 7919) % 9_000) * 10;
      await run(
        `UPDATE ${dokument} SET ${q('POZNAMKA')} = 'bench ${i}' WHERE ${q('ID')} BETWEEN ${first} AND ${first + 9}`,
      );
      let answered = 0;
      const sync = await wall(async () => {
        const { body, link } = await json(stack, next);
        answered = body.DOKUMENT!.length;
        next = target(link)[1]!;
      });
      if (answered !== 10) throw new Error(`the sync answered ${answered} changes, not 10`);
      const page = await wall(() =>
        json(stack, `/demo/JsonAPI/Data/getDataPaginate/DOKUMENT?fromRow=${first}&rows=10`),
      );
      if (i >= 3) {
        syncTimes.push(sync);
        pageTimes.push(page);
      }
    }
    report(
      `getChanges of DOKUMENT answering 10 changes [${label}]`,
      syncTimes.sort((a, b) => a - b),
      `getDataPaginate of 10 rows [${label}]`,
      pageTimes.sort((a, b) => a - b),
      {
        id: `changeFeed.sync10.${database}`,
        goal: 1.2,
        note: 'a sync costs its changes, not the table: stamp (one round trip) + the changed keys joined to their rows',
      },
    );

    // The ERP's update of 10,000 rows, recording on and off, alternating; the change rows it
    // leaves are removed between runs (untimed), so every run starts alike.
    const disable = tsql
      ? `DISABLE TRIGGER dbo.SVC_CHANGES_DOKUMENT_TRG ON dbo.DOKUMENT`
      : `ALTER TABLE dbo."DOKUMENT" DISABLE TRIGGER USER`;
    const enable = tsql
      ? `ENABLE TRIGGER dbo.SVC_CHANGES_DOKUMENT_TRG ON dbo.DOKUMENT`
      : `ALTER TABLE dbo."DOKUMENT" ENABLE TRIGGER USER`;
    const update = (n: number) =>
      run(
        `UPDATE ${dokument} SET ${q('POZNAMKA')} = 'hromadně ${n}' WHERE ${q('ID')} BETWEEN 20001 AND 30000`,
      );
    const on: number[] = [];
    const off: number[] = [];
    for (let i = 0; i < UPDATE_RUNS + 1; i++) {
      await run(`DELETE FROM dbo.${q('SVC_CHANGES_DOKUMENT')} WHERE ${q('BATCH')} IS NULL`);
      const withRecording = await wall(() => update(i * 2));
      await run(disable);
      const without = await wall(() => update(i * 2 + 1));
      await run(enable);
      if (i > 0) {
        on.push(withRecording);
        off.push(without);
      }
    }
    on.sort((a, b) => a - b);
    off.sort((a, b) => a - b);
    report(
      `the ERP's update of 10,000 DOKUMENT rows, recording on [${label}]`,
      on,
      `the same, recording off [${label}]`,
      off,
      {
        id: `changeFeed.recording10k.${database}`,
        goal: 2,
        note: `recording adds ${(median(on) - median(off)).toFixed(0)} ms (${((median(on) / median(off) - 1) * 100).toFixed(0)} % of the update itself; goal: at most 100 %)`,
      },
    );
    record({
      id: `changeFeed.recordingAdded.${database}`,
      subject: `recording's added time [${label}]`,
      baseline: `the update itself [${label}]`,
      unit: 'ms',
      subjectMedian: median(on) - median(off),
      baselineMedian: median(off),
      value: (median(on) - median(off)) / median(off),
      kind: 'ratio',
      goal: 1,
    });
  } finally {
    await stack.stop();
  }
}

/** The change feed's two goals (issue 28) on the embedded database and on the T-SQL engine. */
export default async function changeFeedBench(): Promise<void> {
  await onStack('embedded', 'embedded');
  if (!tsqlAvailable()) {
    console.log(
      'T-SQL engine not found (TSQL_ENGINE_DIR) and no MSSQL_URL: the change feed on T-SQL not measured',
    );
    return;
  }
  await onStack('tsql', 'T-SQL engine');
}
