import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { createEmbeddedDataSourceReader } from '../../shared/adapters/embedded/data-source-reader.js';
import { createMssqlDataSourceReader } from '../../shared/adapters/mssql/data-source-reader.js';
import { byDialect } from '../../shared/config/databases.js';
import type { DataSourceReader } from '../../shared/core/data-api/reader.js';
import { recordEncoder } from '../../shared/core/data-api/records.js';
import type { DataSourceInfo } from '../../shared/core/database.js';
import {
  figureNaming,
  type OtherDatabase,
  report,
  sampleInterleaved,
  sampleInterleavedCpu,
} from './measure.js';

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
    embedded: createEmbeddedDataSourceReader,
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

  // Keyset continuation: the page at row 99,001 by its cursor (the Link of the page before it)
  // against the first page, both via HTTP; the offset figure above is the comparison.
  const linkTo = async (fromRow: number) => {
    const response = await fetch(pageUrl(fromRow), { headers: { authorization: AUTH } });
    await response.arrayBuffer();
    const link = /^<([^>]+)>; rel="next"$/.exec(response.headers.get('link') ?? '')?.[1];
    if (!link?.includes('after=')) throw new Error(`page ${fromRow} has no cursor link`);
    return `${stack.url}${link}`;
  };
  const deepCursor = await linkTo(98_001);
  {
    const body = (await (await fetch(deepCursor, { headers: { authorization: AUTH } })).json()) as {
      DOKUMENT: { ID: number }[];
    };
    if (body.DOKUMENT.length !== ROWS || body.DOKUMENT[0]!.ID !== 99_001) {
      throw new Error('the cursor of page 98,001 does not continue at row 99,001');
    }
  }
  const viaCursor = async () => {
    const response = await fetch(deepCursor, { headers: { authorization: AUTH } });
    if (response.status !== 200) throw new Error(`cursor page: ${response.status}`);
    await response.arrayBuffer();
  };
  const [byCursor, firstAgain] = await sampleInterleaved(viaCursor, () => viaHttp(1), runs);
  report(
    label('getDataPaginate after= cursor at row 99001, 1000 rows, via HTTP'),
    byCursor,
    'fromRow 1, via HTTP',
    firstAgain,
    { id: id('dataApi.cursorDeepPageVsFirstPage'), goal: 1.1 },
  );
  const [byCursorCpu, firstCpu] = await sampleInterleavedCpu(viaCursor, () => viaHttp(1), runs);
  report(
    label('getDataPaginate after= cursor at row 99001, 1000 rows, via HTTP, CPU time'),
    byCursorCpu,
    'fromRow 1, via HTTP, CPU time',
    firstCpu,
    { id: id('dataApi.cursorDeepPageVsFirstPageCpu'), goal: on ? undefined : 1.1 },
  );

  let i = 0;
  const pages = Array.from({ length: runs * 2 }, () => 1 + ((i++ * 7919) % 100) * ROWS);
  await checkPages(pages);
  let a = 0;
  let b = 0;
  /** `subject` against `baseline`, alternating, each on the next of the pages across the table. */
  const acrossPages = async (
    subject: readonly [string, (fromRow: number) => Promise<void>],
    baseline: readonly [string, (fromRow: number) => Promise<void>],
    options: { id: string; goal?: number },
    sampler = sampleInterleaved,
  ) => {
    const [subjectTimes, baselineTimes] = await sampler(
      () => subject[1](pages[a++ % pages.length]!),
      () => baseline[1](pages[b++ % pages.length]!),
      runs,
    );
    report(label(subject[0]), subjectTimes, baseline[0], baselineTimes, options);
  };
  const viaStack = [
    'getDataPaginate 1000 rows via HTTP (local stack), pages across the table',
    viaHttp,
  ] as const;
  const directly = ['the same query run directly on the database', direct] as const;
  // The goal of issue 20 on both databases.
  await acrossPages(viaStack, directly, { id: id('dataApi.paginateViaStackVsDirect'), goal: 1.25 });
  // The least any HTTP answer of these rows costs here: a bare server that runs the same query, the
  // same record encoder, one join and one write (no routing, event, authentication, ETag or
  // answer limits), read by the same client. Its answer is the stack's, byte for byte (checked).
  const bare = await bareRecordServer(reader, source);
  try {
    const bareUrl = (fromRow: number) => `${bare.url}?fromRow=${fromRow}&rows=${ROWS}`;
    const viaBare = async (fromRow: number) => {
      const response = await fetch(bareUrl(fromRow));
      if (response.status !== 200) throw new Error(`bare page ${fromRow}: ${response.status}`);
      await response.arrayBuffer();
    };
    for (const fromRow of [1, 99_001]) {
      const [fromStack, fromBare] = await Promise.all([
        fetch(pageUrl(fromRow), { headers: { authorization: AUTH } }).then((r) => r.text()),
        fetch(bareUrl(fromRow)).then((r) => r.text()),
      ]);
      if (fromStack !== fromBare) throw new Error(`the bare server's page ${fromRow} is not the stack's`);
    }
    const barely = ['bare HTTP server: the same query, encoder and write, 1000 rows', viaBare] as const;
    await acrossPages(barely, directly, { id: id('dataApi.barePageVsDirect') });
    await acrossPages(viaStack, ['the bare HTTP server', viaBare], {
      id: id('dataApi.paginateViaStackVsBare'),
    });
  } finally {
    await new Promise((resolve) => bare.server.close(resolve));
  }
  // The same in CPU time of this process (stack, database and client all run here): what the
  // service adds to the query, which the load of other processes on the machine cannot change.
  // On the T-SQL engine the database works in its own process: there the direct query's CPU time
  // here is the driver's alone, so that figure carries no goal.
  await acrossPages(
    ['getDataPaginate 1000 rows via HTTP (local stack), CPU time of this process', viaHttp],
    ['the same query run directly, CPU time', direct],
    { id: id('dataApi.paginateViaStackVsDirectCpu'), goal: on ? undefined : 1.25 },
    sampleInterleavedCpu,
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

/**
 * An HTTP server that answers `?fromRow=&rows=` with the page's records as the stack writes them
 * (`{"DOKUMENT":[…]}`) and does nothing else: the floor under any service's answer of those rows.
 */
async function bareRecordServer(
  reader: DataSourceReader,
  source: DataSourceInfo,
): Promise<{ server: Server; url: string }> {
  const encode = recordEncoder(source.columns);
  const server = createServer((request, response) => {
    const query = new URL(request.url ?? '/', 'http://bare').searchParams;
    const fromRow = Number(query.get('fromRow'));
    const rows = Number(query.get('rows'));
    void (async () => {
      const records: string[] = [];
      for await (const batch of reader.readPage(source, fromRow - 1, rows, rows)) {
        for (const row of batch) records.push(encode(row));
      }
      const body = `{${JSON.stringify(source.name)}:[${records.join(',')}]}`;
      response.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body, 'utf8'),
      });
      response.end(body, 'utf8');
    })().catch((error: unknown) => {
      response.writeHead(500).end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/` };
}
