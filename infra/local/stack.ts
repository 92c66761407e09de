import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { S3Client } from '@aws-sdk/client-s3';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { FauxqsServer } from 'fauxqs';
import { useEmbeddedDatabaseOpener } from '../../shared/config/databases.js';
import { ConfigurationError, getSettings, intFromEnv } from '../../shared/config/settings.js';
import { useTenantRegistrySource } from '../../shared/config/tenant-registry.js';
import { parseTenantRegistry } from '../../shared/config/tenants.js';
import type { Database } from '../../shared/core/database.js';
import { describeError } from '../../shared/core/log.js';
import { parseQualifiedName } from '../../shared/core/sql-names.js';
import { continueTrace, TRACEPARENT } from '../../shared/core/trace-context.js';
import { isServiceLog, serviceLog, useObservability } from '../../shared/lambda/observability.js';
import { logAccess, notingErrorCodes } from './access-log.js';
import { startAnswerExpiry } from './answer-expiry.js';
import { startAwsEmulator } from './aws-emulator.js';
import {
  embeddedDatabasesOf,
  type LocalDatabaseKind,
  type LocalDatabaseLogin,
  type LocalDemoDatabase,
  localDatabaseKind,
  localDatabaseLogin,
  openLocalDemoDatabase,
  withDemoConnection,
} from './demo-database.js';
import { tenantDocsRoute } from './docs-routes.js';
import type { EmbeddedInspector } from './embedded-thread.js';
import { localFunctionInstances } from './function-instances.js';
import { createHttpGateway, gatewayTimeoutMs, methodsAtPath } from './http-gateway.js';
import { lambdaInvokeRoute } from './lambda-invoke.js';
import {
  answerClientError,
  gatewayAnswers,
  hasDeterminableBody,
  parseRequestTarget,
  sendGatewayAnswer,
  sendJson,
  sendMethodNotAllowed,
  sendRouteNotFound,
  traceHeadersOf,
} from './local-http.js';
import { createLocalRoutes } from './local-routes.js';
import { localQueues, WEB_API_JOB_QUEUE } from './queues.js';
import { importHandler, lambdaRoutes } from './routes.js';
import { readServerlessConfig, resolveParams } from './serverless-config.js';
import { type SqsLambda, type SqsPoller, startSqsPoller } from './sqs-poller.js';
import { subjectWebhookRoute } from './webhook-routes.js';

const HERE = dirname(fileURLToPath(import.meta.url));
export const LARGE_ANSWER_BUCKET = 'svc-large-answers-local';

export interface LocalStackOptions {
  /** HTTP port; 0 picks a free one. */
  readonly port?: number;
  /** Extra environment for the handlers (same names as in Lambda). */
  readonly env?: Record<string, string>;
  /** Where the demo tenant's data lives; default LOCAL_DATABASE, else embedded. */
  readonly database?: LocalDatabaseKind;
  /** Which login the demo tenant uses on the T-SQL engine; default LOCAL_DATABASE_LOGIN, else admin. */
  readonly databaseLogin?: LocalDatabaseLogin;
  /**
   * The SQS/S3 endpoint everything uses, given the emulator's (default: the emulator's). Fault
   * tests put a proxy there that can be cut, so that the emulator keeps its queues meanwhile.
   */
  readonly awsEndpoint?: (emulatorEndpoint: string) => Promise<string>;
}

export interface LocalStack {
  readonly url: string;
  readonly port: number;
  /** The demo tenant's database (embedded or T-SQL), through the database port. */
  readonly database: Database;
  readonly databaseKind: LocalDatabaseKind;
  /** The role the demo tenant's login holds on the T-SQL engine with LOCAL_DATABASE_LOGIN=service-role. */
  readonly serviceRole?: string;
  /** Raw SQL on the embedded database (embedded kind only), for tests that look inside PostgreSQL. */
  readonly pglite?: EmbeddedInspector;
  /** Where the demo data lives, for the start banner. */
  readonly databaseDescription: string;
  /** The tenant registry document in force, the demo tenant pointed at `database`. */
  readonly registry: unknown;
  readonly emulator: FauxqsServer;
  /** Queue URLs by queue name (dead-letter queues as `<name>-dlq`). */
  readonly queueUrls: ReadonlyMap<string, string>;
  /**
   * For fault tests: kills the Web API job worker invocations that have a batch in hand, as a
   * crashed Lambda (their messages come back after the visibility time-out), and starts fresh
   * pollers in their place. Answers how many were killed.
   */
  killJobWorker(): number;
  /**
   * For tests of receives that never reach the function (Lambda's poller throttled): stops the
   * pollers of `queue` (waiting for a batch in hand) so that a test can receive its messages
   * itself; the function answered starts fresh pollers in their place.
   */
  pauseConsumers(queue: string): Promise<() => void>;
  stop(): Promise<void>;
}

async function pointDemoWebhookAt(db: Database, url: string): Promise<void> {
  await db.query(`UPDATE dbo."SUBJECT" SET "WEBHOOK_URL" = ${db.dialect.param(1)} WHERE "ID" = 1`, [url]);
}

function isLoopback(request: IncomingMessage): boolean {
  const address = request.socket.remoteAddress ?? '';
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}

/**
 * The fair-share settings serverless.yml gives every HTTP function (its parameters' defaults),
 * unless the environment sets them: the same limits locally as in a deployment.
 */
function fairShareEnvironment(): Record<string, string> {
  const config = readServerlessConfig();
  const fromParams: Record<string, string> = {
    TENANT_CONCURRENT_REQUESTS: 'tenantConcurrentRequests',
    TENANT_REQUESTS_PER_SECOND: 'tenantRequestsPerSecond',
    TENANT_LIMITS_TIMEOUT_MS: 'tenantLimitsTimeoutMs',
    REQUEST_FUNCTION_CONCURRENCY: 'requestFunctionConcurrency',
  };
  return {
    ...Object.fromEntries(
      Object.entries(fromParams).map(([variable, param]) => [
        variable,
        process.env[variable] ?? resolveParams(config, `\${param:${param}}`),
      ]),
    ),
    // dynalite answers from this very process, behind whatever the event loop is doing (a burst of
    // a hundred requests, say): DynamoDB's few milliseconds are not its, so it gets more time.
    TENANT_LIMITS_TIMEOUT_MS: process.env.TENANT_LIMITS_TIMEOUT_MS ?? '2000',
  };
}

/**
 * Starts the whole service on this machine: the SQS/S3 emulator, the embedded database with the
 * demo tenant, and the Lambda handlers behind an HTTP API emulation.
 */
export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  const { emulator, endpoint: emulatorEndpoint } = await startAwsEmulator({
    bucket: LARGE_ANSWER_BUCKET,
    env: {
      // Local defaults of CONTRACT.md section 3 (production: the long schedule, private targets refused).
      WEBHOOK_RETRY_SCHEDULE: process.env.WEBHOOK_RETRY_SCHEDULE ?? '1,2,4',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS ?? 'true',
      // Fair share between tenants, with serverless.yml's parameters as a deploy without --param has them.
      ...fairShareEnvironment(),
      ...options.env,
    },
  });

  const endpoint = options.awsEndpoint ? await options.awsEndpoint(emulatorEndpoint) : emulatorEndpoint;
  process.env.AWS_ENDPOINT_URL = endpoint;

  const demo = await openLocalDemoDatabase(
    options.database ?? localDatabaseKind(),
    'demo',
    options.databaseLogin ?? localDatabaseLogin(),
  );
  const db = demo.database;
  const registryFile = process.env.TENANT_REGISTRY_FILE ?? join(HERE, 'tenants.json');
  // The registry file is read again as in Lambda (TENANT_REGISTRY_MAX_AGE_SECONDS, and early for an
  // unknown tenant), so that an edit counts while the stack runs; the demo tenant's database filled in.
  // Its cursors and sync tokens are signed with a key of this clone (`.data/signing-key`, made on
  // the first start) where the file names none: a key written in the repository would be public.
  const signingKey = await localSigningKey();
  // So are the tokens of its OAuth 2.0 token endpoint (`.data/token-signing-key.json`).
  const tokenKey = await localTokenSigningKey();
  const readRegistryFile = async () =>
    withDemoConnection(
      withTokenSigningKey(
        withSigningKey(JSON.parse(await readFile(registryFile, 'utf8')), signingKey),
        tokenKey,
      ),
      demo.connection,
    );
  const registry = await readRegistryFile();
  // A registry the stack cannot serve is refused now, with the setting's path.
  const parsedRegistry = parseTenantRegistry(registry);
  // Every tenant of kind `embedded` gets a database of its own, named by `database.name` and built
  // from the same schema and demo scripts; those the registry names now are opened now (a failure
  // refuses the registry with the setting's path), one named by a later read on its first use.
  const embeddedDatabases = new Map<string, Promise<LocalDemoDatabase>>();
  let webhookSink: string | undefined;
  /**
   * The stack builds its embedded databases itself: it turns recording on for every table a
   * tenant's `changeFeed` lists there, as `npm run db:apply -- --change-feed` does on a tenant's SQL
   * Server (docs/configuration.md, "Change feed"). A table that is not there refuses the registry.
   */
  const recordChangeFeeds = async (name: string, database: Database) => {
    for (const id of parsedRegistry.ids()) {
      const tenant = parsedRegistry.get(id)!;
      if (tenant.database.kind !== 'embedded' || tenant.database.name !== name) continue;
      for (const [index, table] of tenant.changeFeed.entries()) {
        const qualified = parseQualifiedName(table);
        await database
          .query('SELECT dbo.svc_change_feed_enable($1, $2)', [
            qualified?.schema ?? 'dbo',
            qualified?.name ?? table,
          ])
          .catch((error: unknown) => {
            throw new ConfigurationError(
              `Invalid tenant registry: tenants.${id}.changeFeed.${index}: the embedded database "${name}" cannot record ${table} (${(error as Error).message.replace(/^svc_change_feed_enable: /, '')})`,
            );
          });
      }
    }
  };
  const openEmbedded = (name: string) => {
    let opening = embeddedDatabases.get(name);
    if (!opening) {
      opening = openLocalDemoDatabase('embedded', name).then(async (opened) => {
        await recordChangeFeeds(name, opened.database).catch(async (error: unknown) => {
          await opened.close();
          throw error;
        });
        if (webhookSink) await pointDemoWebhookAt(opened.database, webhookSink);
        return opened;
      });
      embeddedDatabases.set(name, opening);
    }
    return opening;
  };
  if (demo.connection.kind === 'embedded') {
    try {
      await recordChangeFeeds(demo.connection.name, demo.database);
    } catch (error) {
      await demo.close();
      await emulator.stop();
      throw error;
    }
  }
  for (const [name, path] of embeddedDatabasesOf(parsedRegistry)) {
    if (demo.connection.kind === 'embedded' && name === demo.connection.name) continue;
    try {
      await openEmbedded(name);
    } catch (error) {
      await Promise.all(
        [...embeddedDatabases.values()].map((opening) =>
          opening.then(
            (d) => d.close(),
            () => undefined,
          ),
        ),
      );
      await demo.close();
      await emulator.stop();
      throw new ConfigurationError(
        `Invalid tenant registry: ${path}: the embedded database "${name}" cannot be served (${(error as Error).message})`,
      );
    }
  }
  useEmbeddedDatabaseOpener(async (name) => (await openEmbedded(name)).database);
  useTenantRegistrySource(readRegistryFile);

  const sqs = new SQSClient({ endpoint });
  const queueUrls = new Map<string, string>();
  /** Every queue's pollers, with what starts a fresh one in a killed one's place. */
  const pollers: { queue: string; poller: SqsPoller; start: () => SqsPoller }[] = [];
  // Queues whose redrive goes to another's dead-letter queue come after it (serverless.yml's slow lanes and passes).
  const ordered = [...localQueues].sort(
    (a, b) => Number(Boolean(a.deadLettersTo)) - Number(Boolean(b.deadLettersTo)),
  );
  for (const queue of ordered) {
    const dlq = queue.deadLettersTo
      ? { QueueUrl: queueUrls.get(`${queue.deadLettersTo}-dlq`) }
      : await sqs.send(new CreateQueueCommand({ QueueName: `${queue.name}-dlq` }));
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
    if (!queue.deadLettersTo) queueUrls.set(`${queue.name}-dlq`, dlq.QueueUrl!);
    process.env[queue.urlEnv] = created.QueueUrl!;
    if (queue.dlqUrlEnv) process.env[queue.dlqUrlEnv] = dlq.QueueUrl!;
  }
  // Lambda's instances of each function, with its database pools (function-instances.ts).
  const instances = localFunctionInstances();
  for (const queue of localQueues) {
    const queueArn = (
      await sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: queueUrls.get(queue.name), AttributeNames: ['QueueArn'] }),
      )
    ).Attributes!.QueueArn!;
    const handler = await importHandler<SqsLambda>(queue.consumer.handler);
    const consumer = instances.of(queue.consumer.function);
    const start = () =>
      startSqsPoller({
        client: sqs,
        queueUrl: queueUrls.get(queue.name)!,
        queueArn,
        handler: (event, context, invocation) => consumer.invoke(() => handler(event, context, invocation)),
        functionName: queue.consumer.function,
        batchSize: queue.consumer.batchSize,
        timeoutSeconds: queue.consumer.timeoutSeconds,
      });
    // One poller per concurrent invocation, as Lambda runs several batches of a queue at once.
    for (let instance = 0; instance < (queue.consumer.concurrency ?? 1); instance++) {
      pollers.push({ queue: queue.name, poller: start(), start });
    }
  }

  // The functions' `request` lines give the access line its error code (access-log.ts).
  const functionsLog = serviceLog();
  const stackLog = notingErrorCodes(functionsLog);
  useObservability({ log: stackLog });

  const gateway = createHttpGateway(lambdaRoutes(), instances);
  const gatewayMethods = methodsAtPath(lambdaRoutes());
  const localRoutes = createLocalRoutes({ database: db, databaseOpen: demo.isOpen, sqs, queueUrls });
  // Local-only routes with a parameter in their path: the Lambda Invoke API and the ERP's stand-in.
  const localPatternRoutes = [
    lambdaInvokeRoute(instances),
    tenantDocsRoute(),
    subjectWebhookRoute({ database: db, sqs, queueUrls }),
  ];
  const inFlight = new Set<ServerResponse>();
  let draining = false;

  const serve = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const target = parseRequestTarget(request.url);
    if (!target || !hasDeterminableBody(request)) {
      return sendJson(response, 400, { message: gatewayAnswers.badRequest.message }, { connection: 'close' });
    }
    const local =
      localRoutes.get(`${request.method} ${target.pathname}`) ??
      localPatternRoutes.map((routes) => routes.match(request.method, target.pathname)).find(Boolean);
    if (local) {
      if (!isLoopback(request))
        return sendJson(response, 403, { message: 'Local routes answer on loopback only' });
      return local(request, response, target);
    }
    if (await gateway(request, response, target)) return;
    // `GET /` is where a newcomer's browser lands first: the API reference.
    if (target.pathname === '/' && (request.method === 'GET' || request.method === 'HEAD')) {
      response.writeHead(302, { location: '/docs', 'content-length': 0 });
      return void response.end();
    }
    const allowed = [
      ...gatewayMethods(target.pathname),
      ...[...localRoutes.keys()]
        .filter((key) => key.endsWith(` ${target.pathname}`))
        .map((key) => key.split(' ')[0]!),
    ];
    if (allowed.length > 0)
      return sendMethodNotAllowed(response, request.method ?? 'GET', target.pathname, allowed);
    sendRouteNotFound(response, request.method ?? 'GET', target.pathname);
  };

  const bodyTimeoutMs = gatewayTimeoutMs();
  const server: Server = createServer((request, response) => {
    // The local stack's own routes, and the gateway's own answers, are in the caller's trace too
    // (CONTRACT 8a); a function's answer replaces this with its own span's (writeHead merges).
    response.setHeader(TRACEPARENT, continueTrace(traceHeadersOf(request)).traceparent);
    logAccess(request, response);
    // A client that goes away mid-request makes these streams emit errors nobody else listens to.
    request.on('error', () => undefined);
    response.on('error', () => undefined);
    if (draining) {
      return sendJson(
        response,
        503,
        { message: gatewayAnswers.unavailable.message },
        { connection: 'close' },
      );
    }
    inFlight.add(response);
    response.once('close', () => inFlight.delete(response));
    // A body that never ends is bounded as API Gateway bounds a request (its 30 s): 408, then the
    // connection closes. Node's own limit (requestTimeout, 5 minutes) would hold it far longer.
    let bodyTimedOut = false;
    const bodyTimer = setTimeout(() => {
      if (request.complete) return;
      bodyTimedOut = true;
      sendJson(response, 408, { message: 'Request Timeout' }, { connection: 'close' });
      response.once('finish', () => request.destroy());
    }, bodyTimeoutMs);
    bodyTimer.unref();
    request.once('end', () => clearTimeout(bodyTimer));
    response.once('close', () => clearTimeout(bodyTimer));
    serve(request, response).catch((error: unknown) => {
      // The reading of a body cut off above fails: its answer is already sent.
      if (bodyTimedOut) return;
      serviceLog().error('local server error', describeError(error));
      if (!response.headersSent) sendGatewayAnswer(response, gatewayAnswers.internal);
      else response.destroy();
    });
  });
  // Whatever the HTTP parser refuses (request line, method, headers, sizes) gets an answer, not a
  // crash; so does CONNECT (authority-form), which HTTP API does not serve either.
  server.on('clientError', answerClientError);
  server.on('connect', (_request: IncomingMessage, socket: Socket) =>
    answerClientError(Object.assign(new Error('CONNECT'), { code: 'CONNECT' }), socket),
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 3000, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  // SUBJECT 1's webhook goes to this stack's own sink unless DEMO_WEBHOOK_URL says otherwise.
  webhookSink = process.env.DEMO_WEBHOOK_URL || `http://127.0.0.1:${port}/_local/webhook-sink`;
  await pointDemoWebhookAt(db, webhookSink);
  for (const opening of embeddedDatabases.values())
    await pointDemoWebhookAt((await opening).database, webhookSink);

  // The retention clean-up (the change feed's recorded changes, exactly once's expired keys), as
  // EventBridge runs changeFeedRetention in AWS: hourly
  // (LOCAL_CHANGE_RETENTION_MS), through the function's instances like any invocation.
  const retentionHandler = await importHandler<() => Promise<unknown>>(
    readServerlessConfig().functions.changeFeedRetention!.handler,
  );
  const retentionRuns = instances.of('changeFeedRetention');
  const retentionTimer = setInterval(
    () => {
      retentionRuns
        .invoke(() => retentionHandler(), { whenThrottled: 'wait' })
        .catch((error: unknown) => {
          serviceLog().error('change retention failed', describeError(error));
        });
    },
    intFromEnv('LOCAL_CHANGE_RETENTION_MS', 3_600_000, 1000),
  );
  retentionTimer.unref();

  const answerExpiry = startAnswerExpiry({
    client: new S3Client({ endpoint, forcePathStyle: true }),
    bucket: LARGE_ANSWER_BUCKET,
    maxAgeMs: intFromEnv('LOCAL_ANSWER_MAX_AGE_MS', getSettings().presignSeconds * 1000, 1),
    intervalMs: intFromEnv('LOCAL_ANSWER_SWEEP_MS', 60_000, 10),
  });
  const graceMs = intFromEnv('LOCAL_SHUTDOWN_GRACE_MS', 3000, 0, 60_000);

  let stopping: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    database: db,
    pglite: demo.pglite,
    databaseKind: demo.kind,
    ...(demo.serviceRole ? { serviceRole: demo.serviceRole } : {}),
    databaseDescription: demo.description,
    registry,
    emulator,
    queueUrls,
    killJobWorker() {
      let killed = 0;
      for (const entry of pollers) {
        if (entry.queue !== WEB_API_JOB_QUEUE || !entry.poller.busy) continue;
        entry.poller.kill();
        entry.poller = entry.start();
        killed++;
      }
      return killed;
    },
    async pauseConsumers(queue) {
      const paused = pollers.filter((entry) => entry.queue === queue);
      if (paused.length === 0) throw new Error(`No consumer of queue ${queue}`);
      await Promise.all(paused.map((entry) => entry.poller.stop()));
      // A long poll the poller gave up still takes a message on the emulator until its wait
      // (1 s) ends: only then are the queue's messages the caller's alone.
      await new Promise((resolve) => setTimeout(resolve, 1_200));
      return () => {
        for (const entry of paused) entry.poller = entry.start();
      };
    },
    stop() {
      stopping ??= (async () => {
        // Stop accepting; requests in flight get `graceMs` to finish, then a 503; queue workers
        // get as long, then are left unfinished with their messages still on the queue.
        draining = true;
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        const pollersStopped = Promise.all(pollers.map((entry) => entry.poller.stop(graceMs)));
        const drained = new Promise<void>((resolve) => {
          const check = setInterval(() => {
            if (inFlight.size === 0) {
              clearInterval(check);
              resolve();
            }
          }, 25);
          setTimeout(() => {
            clearInterval(check);
            resolve();
          }, graceMs);
        });
        await drained;
        for (const response of inFlight) {
          sendJson(response, 503, { message: gatewayAnswers.unavailable.message }, { connection: 'close' });
        }
        // Answers written, sockets may close now.
        await new Promise((resolve) => setTimeout(resolve, 50));
        server.closeAllConnections();
        await closed;
        await pollersStopped;
        clearInterval(retentionTimer);
        await answerExpiry.stop();
        sqs.destroy();
        await emulator.stop();
        useTenantRegistrySource(undefined);
        useEmbeddedDatabaseOpener(undefined);
        await demo.close();
        for (const opening of embeddedDatabases.values()) {
          await opening.then(
            (opened) => opened.close(),
            () => undefined,
          );
        }
        // Unless a test has put a log of its own in place meanwhile.
        if (isServiceLog(stackLog)) useObservability({ log: functionsLog });
      })();
      return stopping;
    },
  };
}

/**
 * The signing key of this clone's local stack, made once (32 random bytes) and kept in
 * `.data/signing-key`, readable by its owner only, so that cursors and sync tokens stay good across
 * restarts; several stacks starting at once agree on the first one written.
 */
export async function localSigningKey(): Promise<string> {
  const dir = join(HERE, '..', '..', '.data');
  const path = join(dir, 'signing-key');
  await mkdir(dir, { recursive: true });
  try {
    await writeFile(path, randomBytes(32).toString('base64url'), { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  // Another stack may have created the file a moment ago and not written it yet.
  for (let attempt = 0; ; attempt++) {
    const key = (await readFile(path, 'utf8')).trim();
    if (key.length >= 32 || attempt === 50) return key;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * The token signing key of this clone's local stack (CONTRACT 4d): an EC P-256 private key as a
 * JWK, made once and kept in `.data/token-signing-key.json`, readable by its owner only, so that
 * tokens stay good across restarts; several stacks starting at once agree on the first one written.
 */
export async function localTokenSigningKey(): Promise<Record<string, unknown>> {
  const dir = join(HERE, '..', '..', '.data');
  const path = join(dir, 'token-signing-key.json');
  await mkdir(dir, { recursive: true });
  const jwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' });
  const made = JSON.stringify({ ...jwk, kid: `local-${randomBytes(6).toString('hex')}` });
  try {
    await writeFile(path, made, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  for (let attempt = 0; ; attempt++) {
    try {
      return JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
    } catch (error) {
      // Another stack may have created the file a moment ago and not written it yet.
      if (attempt === 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}

/** The registry document with `key` as its token signing key where it names none. */
export function withTokenSigningKey(registry: unknown, key: Record<string, unknown>): unknown {
  if (typeof registry !== 'object' || registry === null || Array.isArray(registry)) return registry;
  if ('tokenSigningKeys' in registry) return registry;
  return { ...registry, tokenSigningKeys: [key] };
}

/**
 * The registry document with `key` as its signing key where it names none (neither
 * `pagingCursorKeys` nor `pagingCursorKey`); any other shape as written, for the validator.
 */
export function withSigningKey(registry: unknown, key: string): unknown {
  if (typeof registry !== 'object' || registry === null || Array.isArray(registry)) return registry;
  if ('pagingCursorKeys' in registry || 'pagingCursorKey' in registry) return registry;
  return { pagingCursorKeys: [key], ...registry };
}
