import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { LARGE_ANSWER_BUCKET, startLocalStack } from '../../infra/local/stack.js';
import { createS3LargeObjectStore, s3Client } from '../../shared/adapters/s3/index.js';
import { median, record, report, sampleInterleaved } from './measure.js';

const AUTH = `Basic ${Buffer.from('demo:demo-password').toString('base64')}`;
const ROWS = 100_000;

/** Reads a response body to its end, counting bytes (nothing kept). */
async function drain(response: Response): Promise<number> {
  let bytes = 0;
  for await (const chunk of response.body!) bytes += (chunk as Uint8Array).length;
  return bytes;
}

/**
 * getData of DOKUMENT (100,000 rows, ~38 MB of JSON) end to end through the 303 and the download,
 * against the floor: the same query streamed straight to the object store (rows as the driver
 * gives them, JSON.stringify'd, no service in between) and downloaded the same way. Then the
 * function's memory for 10,000 and 100,000 rows, in a process of its own (answer-memory.ts).
 */
export default async function largeAnswerBench(): Promise<void> {
  const stack = await startLocalStack({ port: 0, database: 'embedded' });
  try {
    const db = stack.database;
    const columns = (await db.findDataSource('dbo', 'DOKUMENT'))!.columns
      .map((c) => `"${c.name}"`)
      .join(', ');
    const store = createS3LargeObjectStore(LARGE_ANSWER_BUCKET, s3Client(true));
    let n = 0;
    const [service, floor] = await sampleInterleaved(
      async () => {
        const response = await fetch(`${stack.url}/demo/JsonAPI/Data/getData/DOKUMENT`, {
          headers: { authorization: AUTH },
          redirect: 'manual',
        });
        if (response.status !== 303) throw new Error(`expected 303, got ${response.status}`);
        await response.arrayBuffer();
        const bytes = await drain(await fetch(response.headers.get('location')!));
        if (bytes < 30e6) throw new Error(`short answer: ${bytes} bytes`);
      },
      async () => {
        const key = `bench/floor-${n++}.json`;
        const upload = store.startUpload(key, 'application/json');
        let rows = 0;
        await upload.write(Buffer.from('{"DOKUMENT":['));
        for await (const batch of db.streamBatches(
          `SELECT ${columns} FROM "dbo"."DOKUMENT" ORDER BY "ID"`,
          [],
          1000,
        )) {
          const text = batch.map((row) => JSON.stringify(row)).join(',');
          await upload.write(Buffer.from(rows === 0 ? text : `,${text}`));
          rows += batch.length;
        }
        await upload.write(Buffer.from(']}'));
        await upload.complete();
        if (rows !== ROWS) throw new Error(`expected ${ROWS} rows, got ${rows}`);
        await drain(await fetch(await store.presignGet(key, 900)));
      },
      Number(process.env.BENCH_LARGE_RUNS ?? 3),
      1,
    );
    report(
      'getData DOKUMENT, 100,000 rows, through the 303 and the download',
      service,
      'floor: the same query streamed straight to the object store and downloaded',
      floor,
      { id: 'dataApi.getData100kVsFloor', goal: 1.5 },
    );
  } finally {
    await stack.stop();
  }

  const memory = await answerMemory();
  const small = median([...memory.small].sort((a, b) => a - b));
  const large = median([...memory.large].sort((a, b) => a - b));
  record({
    id: 'dataApi.getDataPeakHeap10kTo100k',
    subject: 'getData function peak heap, 100,000 rows',
    baseline: 'the same, 10,000 rows',
    unit: 'MB',
    subjectMedian: large,
    baselineMedian: small,
    value: Math.abs(large - small),
    kind: 'difference',
    goal: 20,
    note: `peak heap above resting, per run (MB): 10,000 rows ${memory.small.map((m) => m.toFixed(1)).join(', ')}; 100,000 rows ${memory.large.map((m) => m.toFixed(1)).join(', ')} (difference given as its absolute value)`,
  });
}

/** Runs answer-memory.ts in a process of its own with --expose-gc; its figures. */
function answerMemory(): Promise<{ small: number[]; large: number[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        '--expose-gc',
        '--disable-warning=ExperimentalWarning',
        '--import',
        'tsx',
        join(import.meta.dirname, 'answer-memory.ts'),
        '3',
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      const line = out.trim().split('\n').at(-1) ?? '';
      if (code !== 0) reject(new Error(`answer-memory.ts exited with ${code}: ${out.slice(-500)}`));
      else resolve(JSON.parse(line) as { small: number[]; large: number[] });
    });
  });
}
