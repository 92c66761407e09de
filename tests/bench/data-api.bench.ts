import { startLocalStack } from '../../infra/local/stack.js';
import { createEmbeddedDataSourceReader } from '../../shared/adapters/embedded-sql/data-source-reader.js';
import { report, sampleInterleaved } from './measure.js';

const AUTH = `Basic ${Buffer.from('demo:demo-password').toString('base64')}`;
const ROWS = 1000;

/**
 * getDataPaginate of 1,000 DOKUMENT rows: the deep page (fromRow 99001) against the first, through
 * the local stack; through the stack against the same query run directly on the embedded database
 * (the reader's own statement, no HTTP, no encoding); and, for comparison, the plain OFFSET query's
 * deep page against its first.
 */
export default async function dataApiBench(): Promise<void> {
  const stack = await startLocalStack({ port: 0, database: 'embedded' });
  try {
    const runs = Number(process.env.BENCH_PAGE_RUNS ?? 30);
    const db = stack.database;
    const reader = createEmbeddedDataSourceReader(db);
    const source = (await db.findDataSource('dbo', 'DOKUMENT'))!;
    const viaHttp = async (fromRow: number) => {
      const response = await fetch(
        `${stack.url}/demo/JsonAPI/Data/getDataPaginate/DOKUMENT?fromRow=${fromRow}&rows=${ROWS}`,
        { headers: { authorization: AUTH } },
      );
      const body = (await response.json()) as { DOKUMENT: unknown[] };
      if (body.DOKUMENT.length !== ROWS) throw new Error('short page');
    };
    const direct = async (fromRow: number) => {
      let rows = 0;
      for await (const batch of reader.readPage(source, fromRow - 1, ROWS, 1000)) rows += batch.length;
      if (rows !== ROWS) throw new Error('short page');
    };

    const [deep, first] = await sampleInterleaved(
      () => viaHttp(99_001),
      () => viaHttp(1),
      runs,
    );
    report('getDataPaginate fromRow 99001, 1000 rows, via HTTP', deep, 'fromRow 1, via HTTP', first, {
      id: 'dataApi.deepPageVsFirstPage',
      goal: 1.2,
    });

    let i = 0;
    const pages = Array.from({ length: runs * 2 }, () => 1 + ((i++ * 7919) % 100) * ROWS);
    let a = 0;
    let b = 0;
    const [stackTimes, directTimes] = await sampleInterleaved(
      () => viaHttp(pages[a++ % pages.length]!),
      () => direct(pages[b++ % pages.length]!),
      runs,
    );
    report(
      'getDataPaginate 1000 rows via HTTP (local stack), pages across the table',
      stackTimes,
      'the same query run directly on the embedded database',
      directTimes,
      { id: 'dataApi.paginateViaStackVsDirect', goal: 1.1 },
    );

    const [directDeep, directFirst] = await sampleInterleaved(
      () => direct(99_001),
      () => direct(1),
      runs,
    );
    report('deferred-join page query, offset 99000, run directly', directDeep, 'offset 0', directFirst, {
      id: 'dataApi.deferredJoinDeepVsFirstDirect',
    });
    const columns = source.columns.map((c) => `"${c.name}"`).join(', ');
    const plain = (offset: number) =>
      db.query(
        `SELECT ${columns} FROM "dbo"."DOKUMENT" ORDER BY "ID" OFFSET $1 ROWS FETCH NEXT $2 ROWS ONLY`,
        [offset, ROWS],
      );
    const [plainDeep, plainFirst] = await sampleInterleaved(
      () => plain(99_000),
      () => plain(0),
      runs,
    );
    report(
      'plain OFFSET page query (before), offset 99000, run directly',
      plainDeep,
      'offset 0',
      plainFirst,
      {
        id: 'dataApi.plainOffsetDeepVsFirstDirect',
      },
    );
  } finally {
    await stack.stop();
  }
}
