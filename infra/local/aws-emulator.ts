import { once } from 'node:events';
import { createRequire } from 'node:module';
import { type ListenOptions, Server } from 'node:net';
import { Worker } from 'node:worker_threads';
import { CreateTableCommand, DynamoDBClient, UpdateTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { startFauxqs } from 'fauxqs';
import { resetSettings } from '../../shared/config/settings.js';

const require = createRequire(import.meta.url);

/** The table the local stack counts the tenants' load in (serverless.yml: TenantLimitsTable). */
export const LOCAL_TENANT_LIMITS_TABLE = 'tenant-limits';

/**
 * Runs `start` with every server it starts listening on all interfaces made to listen on loopback
 * instead. fauxqs 2.4.1 listens on 0.0.0.0 whatever its `host` option says (that option only
 * shapes the URLs it hands out), which would let anyone on the developer's network list and read
 * the large answers in the local bucket and write to the queues; the local stack listens on
 * loopback only (CONTRACT 3). Nothing of ours listens on all interfaces, so the rewrite, undone
 * when `start` settles, changes no one else's listen.
 */
export async function onLoopbackOnly<T>(start: () => Promise<T>): Promise<T> {
  const listen = Server.prototype.listen;
  const everywhere = new Set(['0.0.0.0', '::', '']);
  Server.prototype.listen = function listenOnLoopback(this: Server, ...args: unknown[]) {
    const [first] = args;
    if (first && typeof first === 'object' && everywhere.has(String((first as ListenOptions).host ?? ''))) {
      args[0] = { ...(first as ListenOptions), host: '127.0.0.1' };
    }
    return (listen as (...a: unknown[]) => Server).apply(this, args);
  } as typeof listen;
  try {
    return await start();
  } finally {
    Server.prototype.listen = listen;
  }
}

/**
 * Starts the SQS/S3 emulator (fauxqs) and the DynamoDB emulator (dynalite, for the tenants' fair
 * share) on free loopback ports and points the SDK's environment at them with local credentials
 * (`env` on top). With `bucket`, that bucket is created and becomes the large-answer bucket. The
 * table of the tenants' load is created, as serverless.yml declares it. Settings are re-read
 * afterwards. `emulator.stop()` stops both.
 */
export async function startAwsEmulator(options: { env?: Record<string, string>; bucket?: string } = {}) {
  const emulator = await onLoopbackOnly(() => startFauxqs({ port: 0, host: '127.0.0.1', logger: false }));
  const endpoint = `http://127.0.0.1:${emulator.port}`;
  const dynamoDb = await startDynalite();
  const stopFauxqs = emulator.stop.bind(emulator);
  emulator.stop = async () => {
    await stopFauxqs();
    await dynamoDb.stop();
  };
  Object.assign(process.env, {
    AWS_ENDPOINT_URL: endpoint,
    AWS_ENDPOINT_URL_DYNAMODB: dynamoDb.endpoint,
    AWS_REGION: process.env.AWS_REGION ?? 'eu-central-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    S3_FORCE_PATH_STYLE: 'true',
    TENANT_LIMITS_TABLE: LOCAL_TENANT_LIMITS_TABLE,
    ...(options.bucket ? { LARGE_RESULT_BUCKET: options.bucket } : {}),
    ...options.env,
  });
  resetSettings();
  if (options.bucket) {
    const s3 = new S3Client({ endpoint, forcePathStyle: true });
    await s3.send(new CreateBucketCommand({ Bucket: options.bucket }));
    s3.destroy();
  }
  return { emulator, endpoint, dynamoDbEndpoint: dynamoDb.endpoint };
}

/**
 * dynalite in memory on a free loopback port, in a thread of its own (each call costs it a few ms
 * of JavaScript, which would otherwise queue behind the stack's requests on one event loop, as
 * DynamoDB's servers never do), with the tenants' load table as serverless.yml makes it.
 */
export async function startDynalite(): Promise<{ endpoint: string; stop: () => Promise<void> }> {
  const worker = new Worker(DYNALITE_THREAD, {
    eval: true,
    workerData: { dynalite: require.resolve('dynalite') },
  });
  const port = await new Promise<number>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  // Never what keeps a process alive: stop() ends it, and so does the process's end.
  worker.unref();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new DynamoDBClient({
    endpoint,
    region: process.env.AWS_REGION ?? 'eu-central-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  await client.send(
    new CreateTableCommand({
      TableName: LOCAL_TENANT_LIMITS_TABLE,
      AttributeDefinitions: [{ AttributeName: 'tenant', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'tenant', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  // dynalite does not expire items; the call stands for serverless.yml's TimeToLiveSpecification.
  await client
    .send(
      new UpdateTimeToLiveCommand({
        TableName: LOCAL_TENANT_LIMITS_TABLE,
        TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
      }),
    )
    .catch(() => undefined);
  client.destroy();
  return {
    endpoint,
    stop: async () => {
      worker.postMessage('stop');
      await once(worker, 'exit');
    },
  };
}

/**
 * The thread: dynalite on a free loopback port, which it posts back; stops on 'stop'. DynamoDB
 * answers a failed condition with the item as it stood when asked
 * (\`ReturnValuesOnConditionCheckFailure: ALL_OLD\`, since 2023); dynalite 4 predates that, so
 * its condition check is given the item to return, or a refusal would cost the local stack a
 * read more than it costs in AWS.
 */
const DYNALITE_THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const { dirname, join } = require('node:path');
const db = require(join(dirname(workerData.dynalite), 'db'));
require(join(dirname(workerData.dynalite), 'validations', 'updateItem')).types.ReturnValuesOnConditionCheckFailure = {
  type: 'String',
  enum: ['ALL_OLD', 'NONE'],
};
const checkConditional = db.checkConditional;
db.checkConditional = (data, existingItem) => {
  const error = checkConditional(data, existingItem);
  if (error && data.ReturnValuesOnConditionCheckFailure === 'ALL_OLD' && existingItem) error.body.Item = existingItem;
  return error;
};
const server = require(workerData.dynalite)({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
parentPort.on('message', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
`;
