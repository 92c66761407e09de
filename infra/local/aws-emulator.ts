import type { AddressInfo } from 'node:net';
import { CreateTableCommand, DynamoDBClient, UpdateTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import dynalite from 'dynalite';
import { startFauxqs } from 'fauxqs';
import { resetSettings } from '../../shared/config/settings.js';

/** The table the local stack counts the tenants' load in (serverless.yml: TenantLimitsTable). */
export const LOCAL_TENANT_LIMITS_TABLE = 'tenant-limits';

/**
 * Starts the SQS/S3 emulator (fauxqs) and the DynamoDB emulator (dynalite, for the tenants' fair
 * share) on free loopback ports and points the SDK's environment at them with local credentials
 * (`env` on top). With `bucket`, that bucket is created and becomes the large-answer bucket. The
 * table of the tenants' load is created, as serverless.yml declares it. Settings are re-read
 * afterwards. `emulator.stop()` stops both.
 */
export async function startAwsEmulator(options: { env?: Record<string, string>; bucket?: string } = {}) {
  const emulator = await startFauxqs({ port: 0, host: '127.0.0.1', logger: false });
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

/** dynalite in memory on a free loopback port, with the tenants' load table as serverless.yml makes it. */
export async function startDynalite(): Promise<{ endpoint: string; stop: () => Promise<void> }> {
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
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
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
