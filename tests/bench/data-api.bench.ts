import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { createEmbeddedDataSourceReader } from '../../shared/adapters/embedded-sql/data-source-reader.js';
import { createMssqlDataSourceReader } from '../../shared/adapters/mssql/data-source-reader.js';
import { byDialect } from '../../shared/config/databases.js';
import { figureNaming, type OtherDatabase, report, sampleInterleaved } from './measure.js';

const AUTH = `Basic ${Buffer.from('demo:demo-password').toString('base64')}`;
const ROWS = 1000;

/**
 * getDataPaginate of 1,000 DOKUMENT rows: the deep page (fromRow 99001) against the first, through
 * the local stack; through the stack against the same query run directly on the database (the
 * reader's own statement, no HTTP, no encoding); and, for comparison, the plain OFFSET query's
 * deep page against its first. On the embedded database with goals; tsql.bench.ts runs the same
 * on the T-SQL engine (`on` names it, and its figures carry no goal).
 */
export default async function dataApiBench(): Promise<void> {
  const stack = await startLocalStack({ port: 0, database: 'embedded' });
  try {
    await pagingFigures(stack);
  } finally {
    await stack.stop();
  }
}

export async function pagingFigures(stack: LocalStack, on?: OtherDatabase): Promise<void> {
  const { goal, id, label } = figureNaming(on);
  const runs = Number(process.env.BENCH_PAGE_RUNS ?? 30);
  const db = stack.database;
  const reader = byDialect(db, {
    mssql: createMssqlDataSourceReader,
    postgres: createEmbeddedDataSourceReader,
  });
  const source = (await db.findDataSource('dbo', 'DOKUMENT'))!;
  const pageUrl = (fromRow: number) =>
    `${stack.url}/demo/JsonAPI/Data/getDataPaginate/DOKUMENT?fromRow=${fromRow}&rows=${ROWS}`;
  // Timed: the request until the answer's last byte is in. Parsing the JSON is the client's work,
  // not the service's, so each page asked for is checked once, untimed (checkPages).
  const viaHttp = async (fromRow: number) => {
    const response = await fetch(pageUrl(fromRow), { headers: { authorization: AUTH } });
    if (response.status !== 200) throw new Error(`page ${fromRow}: ${response.status}`);
    await response.arrayBuffer();
  };
  const checkPages = async (fromRows: readonly number[]) => {
    for (const fromRow of new Set(fromRows)) {
      const response = await fetch(pageUrl(fromRow), { headers: { authorization: AUTH } });
      const body = (await response.json()) as { DOKUMENT: { ID: number }[] };
      if (body.DOKUMENT.length !== ROWS || body.DOKUMENT[0]!.ID !== fromRow) {
        throw new Error(`page ${fromRow} is not the ${ROWS} rows from ID ${fromRow}`);
      }
    }
  };
  const direct = async (fromRow: number) => {
    let rows = 0;
    for await (const batch of reader.readPage(source, fromRow - 1, ROWS, 1000)) rows += batch.length;
    if (rows !== ROWS) throw new Error('short page');
  };

  await checkPages([99_001, 1]);
  const [deep, first] = await sampleInterleaved(
    () => viaHttp(99_001),
    () => viaHttp(1),
    runs,
  );
  report(label('getDataPaginate fromRow 99001, 1000 rows, via HTTP'), deep, 'fromRow 1, via HTTP', first, {
    id: id('dataApi.deepPageVsFirstPage'),
    goal: goal(1.2),
  });

  let i = 0;
  const pages = Array.from({ length: runs * 2 }, () => 1 + ((i++ * 7919) % 100) * ROWS);
  await checkPages(pages);
  let a = 0;
  let b = 0;
  const [stackTimes, directTimes] = await sampleInterleaved(
    () => viaHttp(pages[a++ % pages.length]!),
    () => direct(pages[b++ % pages.length]!),
    runs,
  );
  report(
    label('getDataPaginate 1000 rows via HTTP (local stack), pages across the table'),
    stackTimes,
    'the same query run directly on the database',
    directTimes,
    { id: id('dataApi.paginateViaStackVsDirect'), goal: goal(1.1) },
  );

  const [directDeep, directFirst] = await sampleInterleaved(
    () => direct(99_001),
    () => direct(1),
    runs,
  );
  report(label('deferred-join page query, offset 99000, run directly'), directDeep, 'offset 0', directFirst, {
    id: id('dataApi.deferredJoinDeepVsFirstDirect'),
  });
  const columns = source.columns.map((c) => db.dialect.quoteIdent(c.name)).join(', ');
  const [offset, rows] = db.dialect.name === 'mssql' ? ['@p1', '@p2'] : ['$1', '$2'];
  const plain = (skip: number) =>
    db.query(
      `SELECT ${columns} FROM dbo.${db.dialect.quoteIdent('DOKUMENT')} ORDER BY ${db.dialect.quoteIdent('ID')} OFFSET ${offset} ROWS FETCH NEXT ${rows} ROWS ONLY`,
      [skip, ROWS],
    );
  const [plainDeep, plainFirst] = await sampleInterleaved(
    () => plain(99_000),
    () => plain(0),
    runs,
  );
  report(
    label('plain OFFSET page query (before), offset 99000, run directly'),
    plainDeep,
    'offset 0',
    plainFirst,
    {
      id: id('dataApi.plainOffsetDeepVsFirstDirect'),
    },
  );
}
