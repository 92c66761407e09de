import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { FauxqsServer } from 'fauxqs';
import { parseTenantRegistry, setTenantRegistry } from '../../shared/config/tenants.js';
import type { Database } from '../../shared/core/database.js';
import { describeError } from '../../shared/core/log.js';
import { serviceLog } from '../../shared/lambda/observability.js';
import { logAccess } from './access-log.js';
import { startAwsEmulator } from './aws-emulator.js';
import {
  type LocalDatabaseKind,
  localDatabaseKind,
  openLocalDemoDatabase,
  withDemoConnection,
} from './demo-database.js';
import { createHttpGateway } from './http-gateway.js';
import { createLocalRoutes, sendJson as json } from './local-routes.js';
import { localQueues } from './queues.js';
import { importHandler, lambdaRoutes } from './routes.js';
import { type SqsLambda, startSqsPoller } from './sqs-poller.js';

const HERE = dirname(fileURLToPath(import.meta.url));
export const LARGE_ANSWER_BUCKET = 'svc-large-answers-local';

export interface LocalStackOptions {
  /** HTTP port; 0 picks a free one. */
  readonly port?: number;
  /** Extra environment for the handlers (same names as in Lambda). */
  readonly env?: Record<string, string>;
  /** Where the demo tenant's data lives; default LOCAL_DATABASE, else embedded. */
  readonly database?: LocalDatabaseKind;
}

export interface LocalStack {
  readonly url: string;
  readonly port: number;
  /** The demo tenant's database (embedded or T-SQL), through the database port. */
  readonly database: Database;
  readonly databaseKind: LocalDatabaseKind;
  /** Where the demo data lives, for the start banner. */
  readonly databaseDescription: string;
  /** The tenant registry document in force, the demo tenant pointed at `database`. */
  readonly registry: unknown;
  readonly emulator: FauxqsServer;
  /** Queue URLs by queue name (dead-letter queues as `<name>-dlq`). */
  readonly queueUrls: ReadonlyMap<string, string>;
  stop(): Promise<void>;
}

function isLoopback(request: IncomingMessage): boolean {
  const address = request.socket.remoteAddress ?? '';
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}

/**
 * Starts the whole service on this machine: the SQS/S3 emulator, the embedded database with the
 * demo tenant, and the Lambda handlers behind an HTTP API emulation.
 */
export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  const { emulator, endpoint } = await startAwsEmulator({
    bucket: LARGE_ANSWER_BUCKET,
    env: {
      // Local defaults of CONTRACT.md section 3 (production: the long schedule, private targets refused).
      WEBHOOK_RETRY_SCHEDULE: process.env.WEBHOOK_RETRY_SCHEDULE ?? '1,2,4',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS ?? 'true',
      ...options.env,
    },
  });

  const demo = await openLocalDemoDatabase(options.database ?? localDatabaseKind());
  const db = demo.database;
  const registryFile = process.env.TENANT_REGISTRY_FILE ?? join(HERE, 'tenants.json');
  const registry = withDemoConnection(JSON.parse(await readFile(registryFile, 'utf8')), demo.connection);
  setTenantRegistry(parseTenantRegistry(registry));

  const sqs = new SQSClient({ endpoint });
  const queueUrls = new Map<string, string>();
  const pollers: { stop(): Promise<void> }[] = [];
  for (const queue of localQueues) {
    const dlq = await sqs.send(new CreateQueueCommand({ QueueName: `${queue.name}-dlq` }));
    const dlqArn = (
      await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ['QueueArn'] }))
    ).Attributes?.QueueArn;
    const created = await sqs.send(
      new CreateQueueCommand({
        QueueName: queue.name,
        Attributes: {
          VisibilityTimeout: String(queue.visibilityTimeoutSeconds),
          RedrivePolicy: JSON.stringify({
            deadLetterTargetArn: dlqArn,
            maxReceiveCount: queue.maxReceiveCount,
          }),
        },
      }),
    );
    queueUrls.set(queue.name, created.QueueUrl!);
    queueUrls.set(`${queue.name}-dlq`, dlq.QueueUrl!);
    process.env[queue.urlEnv] = created.QueueUrl!;
    if (queue.dlqUrlEnv) process.env[queue.dlqUrlEnv] = dlq.QueueUrl!;
  }
  for (const queue of localQueues) {
    const queueArn = (
      await sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: queueUrls.get(queue.name), AttributeNames: ['QueueArn'] }),
      )
    ).Attributes!.QueueArn!;
    const handler = await importHandler<SqsLambda>(queue.consumer.handler);
    // One poller per concurrent invocation, as Lambda runs several batches of a queue at once.
    for (let instance = 0; instance < (queue.consumer.concurrency ?? 1); instance++) {
      pollers.push(
        startSqsPoller({
          client: sqs,
          queueUrl: queueUrls.get(queue.name)!,
          queueArn,
          handler,
          functionName: queue.consumer.function,
          batchSize: queue.consumer.batchSize,
        }),
      );
    }
  }

  const gateway = createHttpGateway(lambdaRoutes);
  const localRoutes = createLocalRoutes({ database: db, sqs, queueUrls });

  const server: Server = createServer((request, response) => {
    logAccess(request, response);
    const url = new URL(request.url ?? '/', 'http://localhost');
    const local = localRoutes.get(`${request.method} ${url.pathname}`);
    const work = local
      ? isLoopback(request)
        ? local(request, response, url)
        : Promise.resolve(json(response, 403, { message: 'Local routes answer on loopback only' }))
      : gateway(request, response).then((handled) => {
          if (!handled) json(response, 404, { message: 'Not Found' });
        });
    work.catch((error: unknown) => {
      serviceLog().error('local server error', describeError(error));
      if (!response.headersSent) json(response, 500, { message: 'Internal Server Error' });
      else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 3000, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  // SUBJECT 1's webhook goes to this stack's own sink unless DEMO_WEBHOOK_URL says otherwise.
  await db.query(`UPDATE dbo."SUBJECT" SET "WEBHOOK_URL" = ${db.dialect.param(1)} WHERE "ID" = 1`, [
    process.env.DEMO_WEBHOOK_URL || `http://127.0.0.1:${port}/_local/webhook-sink`,
  ]);

  let stopping: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    database: db,
    databaseKind: demo.kind,
    databaseDescription: demo.description,
    registry,
    emulator,
    queueUrls,
    stop() {
      stopping ??= (async () => {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await Promise.all(pollers.map((poller) => poller.stop()));
        sqs.destroy();
        await emulator.stop();
        await demo.close();
      })();
      return stopping;
    },
  };
}
