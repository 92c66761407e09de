import { startLocalStack } from '../../infra/local/stack.js';
import { report, sample } from './measure.js';

const AUTH = `Basic ${Buffer.from('demo:demo-password').toString('base64')}`;

/** getDataPaginate of 1,000 DOKUMENT rows through the local stack vs the same query on the embedded database. */
export default async function dataApiBench(): Promise<void> {
  const stack = await startLocalStack({ port: 0, database: 'embedded' });
  try {
    const runs = 40;
    let i = 0;
    const from = () => 1 + ((i++ * 7919) % 99) * 1000;
    const db = stack.database;
    const columns = (await db.findDataSource('dbo', 'DOKUMENT'))!.columns
      .map((c) => `"${c.name}"`)
      .join(', ');
    const direct = await sample(async () => {
      const rows = await db.query(
        `SELECT ${columns} FROM "dbo"."DOKUMENT" ORDER BY "ID" OFFSET $1 ROWS FETCH NEXT $2 ROWS ONLY`,
        [from() - 1, 1000],
      );
      if (rows.length !== 1000) throw new Error('short page');
    }, runs);
    const viaHttp = await sample(async () => {
      const response = await fetch(
        `${stack.url}/demo/JsonAPI/Data/getDataPaginate/DOKUMENT?fromRow=${from()}&rows=1000`,
        {
          headers: { authorization: AUTH },
        },
      );
      const body = (await response.json()) as { DOKUMENT: unknown[] };
      if (body.DOKUMENT.length !== 1000) throw new Error('short page');
    }, runs);
    report(
      'getDataPaginate 1000 rows via HTTP (local stack)',
      viaHttp,
      'same query on the embedded database',
      direct,
    );
  } finally {
    await stack.stop();
  }
}
