import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { startAwsEmulator } from '../../infra/local/aws-emulator.js';
import { openDemoDatabase } from '../../infra/local/demo-database.js';
import { LARGE_ANSWER_BUCKET, withSigningKey } from '../../infra/local/stack.js';
import { createEmbeddedDatabase } from '../../shared/adapters/embedded/index.js';
import { registerEmbeddedDatabase } from '../../shared/config/databases.js';
import { setTenantRegistry } from '../../shared/config/tenant-registry.js';
import { parseTenantRegistry } from '../../shared/config/tenants.js';
import { httpApiEvent } from '../support/http-api-event.js';
import { withTestTokenKey } from '../support/token-keys.js';

/**
 * Run by memory.bench.ts in a process of its own, with --expose-gc: the getData function's peak
 * heap above its resting heap, for a table of 10,000 and one of 100,000 rows (DOKUMENT and a copy
 * of its first 10,000 rows), with the service's settings. Prints one JSON line.
 */
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');

const { emulator } = await startAwsEmulator({ bucket: LARGE_ANSWER_BUCKET });
const pg = await openDemoDatabase();
await pg.exec(`CREATE TABLE dbo."DOKUMENT_10K" (LIKE dbo."DOKUMENT" INCLUDING ALL);
  INSERT INTO dbo."DOKUMENT_10K" SELECT * FROM dbo."DOKUMENT" WHERE "ID" <= 10000;
  ANALYZE dbo."DOKUMENT_10K";`);
registerEmbeddedDatabase('demo', createEmbeddedDatabase(pg));
const registry = join(import.meta.dirname, '../../infra/local/tenants.json');
setTenantRegistry(
  parseTenantRegistry(
    withTestTokenKey(
      withSigningKey(JSON.parse(await readFile(registry, 'utf8')), 'bench-signing-key-of-32-characters'),
    ),
  ),
);
const { handler } = (await import('../../functions/data-api/getData.js')) as {
  handler: (event: unknown, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;
};

const AUTH = `Basic ${Buffer.from('demo:demo-password').toString('base64')}`;
const call = async (table: string) => {
  const result = await handler(
    httpApiEvent({
      method: 'GET',
      route: '/{tenant}/JsonAPI/Data/getData/{dataSource}',
      pathParameters: { tenant: 'demo', dataSource: table },
      headers: { authorization: AUTH },
    }),
    { awsRequestId: 'memory', getRemainingTimeInMillis: () => 30_000 } as unknown as Context,
  );
  // 10,000 rows (3.8 MB) are answered inline, 100,000 (38 MB) through the object store.
  if (result.statusCode !== 200 && result.statusCode !== 303) {
    throw new Error(`getData/${table}: ${result.statusCode}`);
  }
};

/** Peak heapUsed above the resting heap (after a full GC) while `fn` runs, in MB; sampled every ms. */
async function peakHeap(fn: () => Promise<void>): Promise<{ peakMb: number; ms: number }> {
  gc!();
  gc!();
  const resting = process.memoryUsage().heapUsed;
  let peak = resting;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().heapUsed);
  }, 1);
  const start = performance.now();
  await fn();
  const ms = performance.now() - start;
  clearInterval(timer);
  peak = Math.max(peak, process.memoryUsage().heapUsed);
  return { peakMb: (peak - resting) / 2 ** 20, ms };
}

await call('DOKUMENT_10K'); // warm: modules, catalogue, credentials, S3 client
await call('DOKUMENT');
const runs = Number(process.argv[2] ?? 3);
const small: number[] = [];
const large: number[] = [];
for (let i = 0; i < runs; i++) {
  small.push((await peakHeap(() => call('DOKUMENT_10K'))).peakMb);
  large.push((await peakHeap(() => call('DOKUMENT'))).peakMb);
}
console.log(JSON.stringify({ small, large }));
await pg.close();
await emulator.stop();
process.exit(0);
