import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { APIGatewayProxyStructuredResultV2, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { type FauxqsServer, startFauxqs } from 'fauxqs';
import { parse } from 'yaml';
import { LOCAL_TENANT_LIMITS_TABLE, startDynalite } from '../../infra/local/aws-emulator.js';
import {
  type LocalDemoDatabase,
  openLocalDemoDatabase,
  withDemoConnection,
} from '../../infra/local/demo-database.js';
import {
  cloudFormationTags,
  readServerlessConfig,
  resolveParams,
  type ServerlessConfig,
} from '../../infra/local/serverless-config.js';
import { withSigningKey } from '../../infra/local/stack.js';
import { tsqlAvailable } from '../../infra/local/tsql-engine.js';
import { createMssqlWebApiStore } from '../../shared/adapters/mssql/web-api-store.js';
import { type AwsJsonEndpoint, startAwsJsonEndpoint } from './aws-json-endpoint.js';
import { DEMO_AUTH, sqlOn } from './demo.js';
import { encodeForm, httpApiEvent } from './http-api-event.js';
import { stackCondition } from './stack-conditions.js';
import { withTestTokenKey } from './token-keys.js';
import { envelope } from './web-api.js';
import { signedWebApiEvent } from './web-api-event.js';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.js';

/**
 * A packaged function's first request, run as Lambda runs it: the function's zip extracted into a
 * directory outside the repository (no `node_modules` above it, so only what the zip holds can
 * load), a fresh Node process with the function's environment from serverless.yml and no other,
 * the handler imported and called once with an event, against a T-SQL database (the engine of
 * infra/local/tsql-engine.ts), Secrets Manager and SSM (tests/support/aws-json-endpoint.ts), SQS
 * and S3 (fauxqs) and a webhook receiver, all on loopback. Used by the packaging test (what ships
 * is what is tested) and `npm run bench cold-start` (what a first request loads).
 */

/** The fresh process: runs one invocation given by the JSON spec in argv[2]; writes the outcome to `spec.output`. */
export const FIRST_REQUEST_PROBE = `
import { readFileSync, writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));
// Every module loaded from here on, in order, once each way: the bundle's files and Node's
// builtins, each with how it was asked for (an ES module import of a builtin makes Node build its
// ES module face, which costs more than \`require\`).
const loaded = [];
const seen = new Set();
registerHooks({
  load(url, context, nextLoad) {
    const via = context.conditions && context.conditions.includes('require') ? 'require' : 'import';
    if (!seen.has(via + ' ' + url)) {
      seen.add(via + ' ' + url);
      loaded.push({ url, via });
    }
    return nextLoad(url, context);
  },
});
const outcome = { loaded };
try {
  const started = performance.now();
  const module = await import(spec.entry);
  const imported = performance.now();
  outcome.initMs = imported - started;
  const deadline = Date.now() + spec.timeoutSeconds * 1000;
  const context = {
    awsRequestId: spec.requestId,
    functionName: spec.functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:eu-central-1:000000000000:function:' + spec.functionName,
    memoryLimitInMB: String(spec.memorySize),
    logGroupName: '/aws/lambda/' + spec.functionName,
    logStreamName: 'first-request',
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  };
  outcome.result = await module.handler(spec.event, context);
  outcome.requestMs = performance.now() - imported;
} catch (error) {
  outcome.error = String(error && error.stack ? error.stack : error);
}
writeFileSync(spec.output, JSON.stringify(outcome));
// Pooled database connections and keep-alive sockets would keep the process up.
process.exit(0);
`;

/** A module a fresh process loaded: its URL, and whether by `import` (or `import()`) or `require`. */
export interface LoadedModule {
  readonly url: string;
  readonly via: 'import' | 'require';
}

/** What one fresh process did. */
export interface FirstRequestOutcome {
  /** The handler's answer (absent when it threw: see `error`). */
  readonly result?: unknown;
  readonly error?: string;
  /**
   * Modules loaded by importing the handler and running the request, in order: file URLs and
   * `node:` builtins, each with how it was loaded (once each way).
   */
  readonly loaded: readonly LoadedModule[];
  readonly initMs?: number;
  readonly requestMs?: number;
  /** The process's stdout and stderr (the function's log lines). */
  readonly output: string;
}

/** One invocation: its event, and what makes its answer right (a problem, or undefined). */
export interface Invocation {
  readonly description: string;
  readonly event: unknown;
  readonly check: (result: unknown) => string | undefined;
  /** Environment on top of the function's own (e.g. a lower inline limit). */
  readonly env?: Record<string, string>;
}

const http = (result: unknown) => result as APIGatewayProxyStructuredResultV2;
const bodyOf = (result: unknown) => {
  const r = http(result);
  return Buffer.from(String(r.body ?? ''), r.isBase64Encoded ? 'base64' : 'utf8').toString('utf8');
};
const expectStatus =
  (status: number, also?: (result: APIGatewayProxyStructuredResultV2, body: string) => string | undefined) =>
  (result: unknown) => {
    const r = http(result);
    if (r?.statusCode !== status)
      return `status ${r?.statusCode} (expected ${status}): ${bodyOf(result).slice(0, 500)}`;
    return also?.(r, bodyOf(result));
  };
const noBatchFailures = (result: unknown) => {
  const failures = (result as SQSBatchResponse | undefined)?.batchItemFailures;
  return Array.isArray(failures) && failures.length === 0
    ? undefined
    : `batchItemFailures ${JSON.stringify(failures)}`;
};

/** An SQS event of one record, as Lambda's event source mapping hands it over. */
export function sqsEvent(queueArn: string, body: string, receiptHandle: string = randomUUID()): SQSEvent {
  const now = String(Date.now());
  return {
    Records: [
      {
        messageId: randomUUID(),
        receiptHandle,
        body,
        attributes: {
          ApproximateReceiveCount: '1',
          SentTimestamp: now,
          SenderId: 'AIDAFIRSTREQUEST',
          ApproximateFirstReceiveTimestamp: now,
        },
        messageAttributes: {},
        md5OfBody: '',
        eventSource: 'aws:sqs',
        eventSourceARN: queueArn,
        awsRegion: REGION,
      },
    ],
  };
}

const REGION = 'eu-central-1';
const BUCKET = 'first-request-answers';
const QUEUES = {
  DocumentReceivedQueue: 'document-received',
  DocumentReceivedDeadLetterQueue: 'document-received-dlq',
  WebApiJobQueue: 'web-api-jobs',
  WebApiJobDeadLetterQueue: 'web-api-jobs-dlq',
  DocumentReceivedSlowQueue: 'document-received-slow',
  ChangeNotificationQueue: 'change-notifications',
  ChangeNotificationSlowQueue: 'change-notifications-slow',
  NotifierPassQueue: 'change-notifier-passes',
  ChangeNotificationDeadLetterQueue: 'change-notifications-dlq',
} as const;
/** A demo file of infra/sql/mssql/demo/020-erp-data.sql (an XML invoice, 1.5 KB). */
export const DEMO_FILE_GUID = 'FB3D403F-F961-5D82-356C-F7151BA88D65';

export interface FirstRequestEnvironment {
  /** The function's Lambda environment: serverless.yml's (params resolved), pointed at the local services. */
  env(functionName: string): Record<string, string>;
  /** The typical first request of a function (a fresh one each call: new document ids, signatures, jobs). */
  typicalRequest(functionName: string): Promise<Invocation>;
  readonly database: LocalDemoDatabase;
  readonly emulator: FauxqsServer;
  readonly secrets: AwsJsonEndpoint;
  readonly receiver: WebhookReceiver;
  readonly queueUrls: Readonly<Record<keyof typeof QUEUES, string>>;
  readonly queueArns: Readonly<Record<keyof typeof QUEUES, string>>;
  readonly registrySecretId: string;
  readonly registryParameter: string;
  readonly bucket: string;
  stop(): Promise<void>;
}

/** Whether the first requests can run here: they need a T-SQL database (MSSQL_URL or the engine). */
export const firstRequestsAvailable = tsqlAvailable;

/**
 * A condition of the stack (infra/resources/parameters.yml), evaluated with the params' defaults:
 * its operands are `${param:…}` literals once resolved, as a deployment of stage `dev` has them.
 */
function parameterCondition(config: ServerlessConfig, name: string): boolean {
  // Through JSON: a short tag's sequence arrives as the YAML library's node, not an array.
  const conditions = JSON.parse(
    JSON.stringify(
      parse(readFileSync(join(ROOT, 'infra', 'resources', 'parameters.yml'), 'utf8'), {
        customTags: cloudFormationTags as never,
      }).Conditions,
    ),
  ) as Record<string, unknown>;
  return stackCondition(conditions, name, (operand) => resolveParams(config, String(operand)));
}

/**
 * A value of serverless.yml's `environment`, resolved as a deployment of stage `dev` would;
 * undefined where it is `AWS::NoValue` (the variable is not set).
 */
function resolveValue(
  config: ServerlessConfig,
  value: unknown,
  refs: Record<string, string>,
  name: string,
): string | undefined {
  // Through JSON: a short tag's sequence arrives as the YAML library's node, not an array.
  const choice = (
    JSON.parse(JSON.stringify(value ?? null)) as { 'Fn::If'?: [string, unknown, unknown] } | null
  )?.['Fn::If'];
  if (choice)
    return resolveValue(config, parameterCondition(config, choice[0]) ? choice[1] : choice[2], refs, name);
  if ((value as { 'Fn::Ref'?: unknown } | null)?.['Fn::Ref'] === 'AWS::NoValue') return undefined;
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
    return resolveParams(config, String(value))
      .replace(/\$\{sls:stage\}/g, 'dev')
      .replace(/\$\{self:service\}/g, String((config as unknown as { service: string }).service));
  }
  const ref = (value as { 'Fn::Ref'?: unknown } | null)?.['Fn::Ref'];
  if (typeof ref === 'string' && ref in refs) return refs[ref]!;
  throw new Error(`serverless.yml: environment ${name} = ${JSON.stringify(value)} has no local value`);
}

/**
 * Starts everything the functions' first requests reach: a T-SQL demo database of its own, the
 * tenant registry as a Secrets Manager secret (and an SSM parameter) on loopback, fauxqs (the
 * queues and the large-answer bucket), and a webhook receiver for demo subject 1.
 */
export async function startFirstRequestEnvironment(): Promise<FirstRequestEnvironment> {
  const config = readServerlessConfig();
  const stopping: (() => Promise<unknown>)[] = [];
  try {
    const database = await openLocalDemoDatabase('tsql');
    stopping.push(() => database.close());
    const receiver = await startWebhookReceiver();
    stopping.push(() => receiver.close());
    const emulator = await startFauxqs({ port: 0, host: '127.0.0.1', logger: false, defaultRegion: REGION });
    stopping.push(() => emulator.stop());
    emulator.createBucket(BUCKET);
    const queueUrls = {} as Record<keyof typeof QUEUES, string>;
    const queueArns = {} as Record<keyof typeof QUEUES, string>;
    for (const [ref, name] of Object.entries(QUEUES) as [keyof typeof QUEUES, string][]) {
      const queue = emulator.createQueue(name, { region: REGION, attributes: { VisibilityTimeout: '60' } });
      queueUrls[ref] = queue.queueUrl;
      queueArns[ref] = queue.queueArn;
    }

    // The local registry's demo tenant on the T-SQL database. Nobody runs getDataAsync's jobs while
    // it waits, so it waits 1 s (the least) instead of 20 before answering "still running".
    const local = withDemoConnection(
      withTestTokenKey(
        withSigningKey(
          JSON.parse(readFileSync(join(ROOT, 'infra', 'local', 'tenants.json'), 'utf8')),
          's'.repeat(32),
        ),
      ),
      database.connection,
    ) as { tenants: Record<string, { webApi: Record<string, unknown> }> };
    local.tenants.demo!.webApi.CommandTimeoutAsync = 1;
    const registry = JSON.stringify(local);
    const registrySecretId = resolveValue(
      config,
      config.provider.environment?.TENANT_REGISTRY_SECRET_ID,
      {},
      'TENANT_REGISTRY_SECRET_ID',
    );
    if (!registrySecretId) throw new Error('serverless.yml: TENANT_REGISTRY_SECRET_ID is not set for dev');
    const registryParameter = '/erp-gateway/dev/tenant-registry';
    const secrets = await startAwsJsonEndpoint(
      new Map([
        [registrySecretId, registry],
        [registryParameter, registry],
      ]),
    );
    stopping.push(() => secrets.close());

    // Demo subject 1 delivers its webhooks to the receiver (loopback: a private target, allowed below).
    await sqlOn(database.database)`UPDATE dbo."SUBJECT" SET "WEBHOOK_URL" = ${`${receiver.url}/first-request`}
      WHERE "ID" = 1`;

    const home = mkdtempSync(join(tmpdir(), 'first-request-home-'));
    stopping.push(async () => rmSync(home, { recursive: true, force: true }));
    const emulatorUrl = `http://127.0.0.1:${emulator.port}`;
    // The tenants' load table (fair share), on DynamoDB's wire protocol.
    const dynamo = await startDynalite();
    stopping.push(() => dynamo.stop());
    const refs: Record<string, string> = {
      LargeAnswerBucket: BUCKET,
      TenantLimitsTable: LOCAL_TENANT_LIMITS_TABLE,
      ...queueUrls,
    };

    const env = (functionName: string): Record<string, string> => {
      const fn = config.functions[functionName];
      if (!fn) throw new Error(`no function ${functionName} in serverless.yml`);
      const declared = { ...config.provider.environment, ...fn.environment };
      return {
        // What Lambda's nodejs22.x runtime sets (credentials of the execution role in the environment).
        AWS_REGION: REGION,
        AWS_DEFAULT_REGION: REGION,
        AWS_ACCESS_KEY_ID: 'ASIAFIRSTREQUEST',
        AWS_SECRET_ACCESS_KEY: 'first-request-secret',
        AWS_SESSION_TOKEN: 'first-request-session',
        AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x',
        AWS_LAMBDA_FUNCTION_NAME: functionName,
        AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(config.provider.memorySize ?? 1024),
        AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
        TZ: ':UTC',
        LANG: 'en_US.UTF-8',
        // An empty home: no ~/.aws of whoever runs this.
        HOME: home,
        ...Object.fromEntries(
          Object.entries(declared).flatMap(([name, value]) => {
            const resolved = resolveValue(config, value, refs, name);
            return resolved === undefined ? [] : [[name, resolved]];
          }),
        ),
        // The local services instead of AWS's.
        AWS_ENDPOINT_URL: emulatorUrl,
        AWS_ENDPOINT_URL_SECRETS_MANAGER: secrets.url,
        AWS_ENDPOINT_URL_SSM: secrets.url,
        AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
        S3_FORCE_PATH_STYLE: 'true',
        // The receiver is on loopback, which production refuses.
        WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      };
    };

    const webApiStore = createMssqlWebApiStore(database.database, 'demo');
    let documentId = 9_000_000 + (Date.now() % 1_000_000) * 100;
    let call = 0;

    /** The typical first request of each function (docs/development.md "Cold starts"). */
    const typical: Record<string, () => Promise<Invocation>> = {
      async dataGetData() {
        return {
          description: 'getData of SUBJECT (60 rows, answered inline)',
          event: httpApiEvent({
            method: 'GET',
            route: '/{tenant}/JsonAPI/Data/getData/{dataSource}',
            pathParameters: { tenant: 'demo', dataSource: 'SUBJECT' },
            headers: { authorization: DEMO_AUTH },
          }),
          check: expectStatus(200, (_r, body) =>
            (JSON.parse(body) as { SUBJECT?: unknown[] }).SUBJECT?.length === 60 ? undefined : 'not 60 rows',
          ),
        };
      },
      async dataGetDataWithCondition() {
        return {
          description: "getDataWithCondition of DOKUMENT, SUBJECT_ID = 1 AND DATUM_VYSTAVENI >= '2024-01-01'",
          event: httpApiEvent({
            method: 'GET',
            route: '/{tenant}/JsonAPI/Data/getDataWithCondition/{dataSource}',
            pathParameters: { tenant: 'demo', dataSource: 'DOKUMENT' },
            query: new URLSearchParams({
              condition: "SUBJECT_ID = 1 AND DATUM_VYSTAVENI >= '2024-01-01'",
            }).toString(),
            headers: { authorization: DEMO_AUTH },
          }),
          check: expectStatus(200),
        };
      },
      async dataGetRowsCount() {
        return {
          description: 'getRowsCount of DOKUMENT',
          event: httpApiEvent({
            method: 'GET',
            route: '/{tenant}/JsonAPI/Data/getRowsCount/{dataSource}',
            pathParameters: { tenant: 'demo', dataSource: 'DOKUMENT' },
            headers: { authorization: DEMO_AUTH },
          }),
          check: expectStatus(200),
        };
      },
      async dataGetDataPaginate() {
        return {
          description: 'getDataPaginate of DOKUMENT, rows 1-100',
          event: httpApiEvent({
            method: 'GET',
            route: '/{tenant}/JsonAPI/Data/getDataPaginate/{dataSource}',
            pathParameters: { tenant: 'demo', dataSource: 'DOKUMENT' },
            query: 'fromRow=1&rows=100',
            headers: { authorization: DEMO_AUTH },
          }),
          check: expectStatus(200, (_r, body) =>
            (JSON.parse(body) as { DOKUMENT?: unknown[] }).DOKUMENT?.length === 100
              ? undefined
              : 'not 100 rows',
          ),
        };
      },
      async dataGetChanges() {
        return {
          description: 'getChanges of SUBJECT: the first page of a sync',
          event: httpApiEvent({
            method: 'GET',
            route: '/{tenant}/JsonAPI/Data/getChanges/{dataSource}',
            pathParameters: { tenant: 'demo', dataSource: 'SUBJECT' },
            query: 'rows=20',
            headers: { authorization: DEMO_AUTH },
          }),
          check: expectStatus(200, (response, body) =>
            (JSON.parse(body) as { SUBJECT?: unknown[] }).SUBJECT?.length === 20 &&
            /rel="next"/.test(String(response.headers?.link))
              ? undefined
              : 'not 20 rows with a next link',
          ),
        };
      },
      async changeFeedRetention() {
        return {
          description: "the retention clean-up of every tenant's recorded tables (a scheduled event)",
          event: { source: 'aws.events', 'detail-type': 'Scheduled Event', detail: {} },
          check: (result) =>
            (result as { failed?: number })?.failed === 0 ? undefined : `answer: ${JSON.stringify(result)}`,
        };
      },
      async dataOpenApi() {
        return {
          description: "the demo tenant's description (every readable table and view)",
          event: httpApiEvent({
            method: 'GET',
            route: '/{tenant}/JsonAPI/openapi.json',
            pathParameters: { tenant: 'demo' },
            headers: { authorization: DEMO_AUTH },
          }),
          check: expectStatus(200, (_r, body) =>
            (JSON.parse(body) as { openapi?: string }).openapi === '3.1.0' ? undefined : 'not OpenAPI 3.1',
          ),
        };
      },
      async fileGetFile() {
        return {
          description: 'getFile of a 1.5 KB demo file (inline)',
          event: httpApiEvent({
            method: 'GET',
            route: '/{tenant}/JsonAPI/File/getFile/{fileGUID}',
            pathParameters: { tenant: 'demo', fileGUID: DEMO_FILE_GUID },
            headers: { authorization: DEMO_AUTH },
          }),
          check: expectStatus(200, (_r, body) => (body.startsWith('<?xml') ? undefined : 'not the XML file')),
        };
      },
      async fileSetFile() {
        const form = new FormData();
        form.append(
          'file',
          new Blob(['first request\n'], { type: 'text/plain; charset=utf-8' }),
          'first.txt',
        );
        const { body, contentType } = await encodeForm(form);
        return {
          description: 'setFile of a small text file',
          event: httpApiEvent({
            method: 'POST',
            route: '/{tenant}/JsonAPI/File/setFile',
            pathParameters: { tenant: 'demo' },
            headers: { authorization: DEMO_AUTH, 'content-type': contentType },
            body,
          }),
          check: expectStatus(200),
        };
      },
      async deliverWebhook() {
        documentId += 1;
        const body = JSON.stringify({ tenant: 'demo', subjectId: 1, documentId });
        const before = receiver.receivedOn('/first-request').length;
        return {
          description: 'one document-received event, delivered (2xx) to the receiver',
          event: sqsEvent(queueArns.DocumentReceivedQueue, body),
          check: (result) =>
            noBatchFailures(result) ??
            (receiver.receivedOn('/first-request').length > before ? undefined : 'the receiver got nothing'),
        };
      },
      async webhookAdmin() {
        return {
          description: "status of subject 1 (the admin function, invoked with the Invoke API's event)",
          event: { action: 'status', tenant: 'demo', subjectId: 1 },
          check: (result) =>
            (result as { ok?: boolean; subjectId?: number })?.ok === true &&
            (result as { subjectId?: number }).subjectId === 1
              ? undefined
              : `answer: ${JSON.stringify(result)}`,
        };
      },
      async dataSubscriptions() {
        return {
          description: "the caller's subscriptions (GET …/Subscriptions)",
          event: httpApiEvent({
            method: 'GET',
            route: '/{tenant}/JsonAPI/Subscriptions',
            pathParameters: { tenant: 'demo' },
            headers: { authorization: DEMO_AUTH },
          }),
          check: expectStatus(200, (_r, body) =>
            Array.isArray((JSON.parse(body) as { subscriptions?: unknown }).subscriptions)
              ? undefined
              : 'no subscriptions list',
          ),
        };
      },
      async authorizationServer() {
        return {
          description: 'a token of the demo client (client credentials, client_secret_basic)',
          event: httpApiEvent({
            method: 'POST',
            route: '/{tenant}/oauth2/token',
            pathParameters: { tenant: 'demo' },
            headers: {
              authorization: `Basic ${Buffer.from('demo-client:demo-client-secret').toString('base64')}`,
              'content-type': 'application/x-www-form-urlencoded',
              host: 'gateway.example',
            },
            body: Buffer.from('grant_type=client_credentials&scope=data.read'),
          }),
          check: expectStatus(200, (_r, body) =>
            (JSON.parse(body) as { token_type?: string }).token_type === 'Bearer' ? undefined : 'no token',
          ),
        };
      },
      async changeNotifier() {
        return {
          description: "a pass of the demo tenant's notifier (no subscriptions: the loop ends)",
          event: sqsEvent(queueArns.NotifierPassQueue, JSON.stringify({ kind: 'pass', tenant: 'demo' })),
          check: (result) => noBatchFailures(result),
        };
      },
      async webTest() {
        return {
          description: 'GET test with the API key',
          event: httpApiEvent({
            method: 'GET',
            route: '/{tenant}/WebAPI/test',
            pathParameters: { tenant: 'demo' },
            headers: { 'x-api-key': 'demo-api-key' },
          }),
          check: expectStatus(200),
        };
      },
      async webGetData() {
        return {
          description: 'signed JSON getData, vltyp 1001',
          event: signedWebApiEvent('getData', envelope(1001, [{ nazev: 'a', call: call++ }])),
          check: expectStatus(200, (_r, body) =>
            (JSON.parse(body) as { vlResult?: number }).vlResult === 1 ? undefined : `vlResult: ${body}`,
          ),
        };
      },
      async webGetDataAsync() {
        return {
          description: 'signed JSON getDataAsync, vltyp 1001 (queued; no worker: "still running" after 1 s)',
          event: signedWebApiEvent('getDataAsync', envelope(1001, [{ nazev: 'a', call: call++ }])),
          check: expectStatus(200, (_r, body) =>
            [1, -2].includes((JSON.parse(body) as { vlResult?: number }).vlResult ?? 0) ? undefined : body,
          ),
        };
      },
      async webJobWorker() {
        const request = envelope(1001, [{ nazev: 'a', call: call++ }]);
        const journalId = await webApiStore.openJournal({
          applicationId: 1,
          vltyp: 1001,
          mode: 'async',
          request,
          requestId: 'first-request',
        });
        return {
          description: 'one queued job (vltyp 1001), run and journaled',
          event: sqsEvent(
            queueArns.WebApiJobQueue,
            JSON.stringify({ tenant: 'demo', journalId, requestId: 'first-request' }),
          ),
          check: (result) => noBatchFailures(result),
        };
      },
    };

    return {
      env,
      async typicalRequest(functionName) {
        const make = typical[functionName];
        if (!make) throw new Error(`no typical first request for ${functionName}`);
        return make();
      },
      database,
      emulator,
      secrets,
      receiver,
      queueUrls,
      queueArns,
      registrySecretId,
      registryParameter,
      bucket: BUCKET,
      async stop() {
        for (const stop of stopping.reverse()) await stop().catch(() => undefined);
      },
    };
  } catch (error) {
    for (const stop of stopping.reverse()) await stop().catch(() => undefined);
    throw error;
  }
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A directory outside the repository (and any node_modules), removed by `remove()`. */
export function outsideTheRepository(prefix: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (!relative(ROOT, dir).startsWith('..')) throw new Error(`${dir} is inside the repository`);
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Runs one invocation of the handler `entry` (a file of an extracted zip under `root`) in a fresh
 * Node process with exactly `env`: nothing of this process's environment (NODE_OPTIONS only if
 * `env` has it).
 */
export async function invokeInFreshProcess(options: {
  readonly root: string;
  readonly entry: string;
  readonly functionName: string;
  readonly event: unknown;
  readonly env: Record<string, string>;
  readonly timeoutSeconds?: number;
}): Promise<FirstRequestOutcome> {
  const work = join(options.root, '.first-request');
  mkdirSync(work, { recursive: true });
  const id = randomUUID();
  const probe = join(work, 'probe.mjs');
  writeFileSync(probe, FIRST_REQUEST_PROBE);
  const specFile = join(work, `${id}.json`);
  const output = join(work, `${id}.out.json`);
  writeFileSync(
    specFile,
    JSON.stringify({
      entry: pathToFileURL(join(options.root, options.entry)).href,
      event: options.event,
      functionName: options.functionName,
      requestId: id,
      memorySize: 1024,
      timeoutSeconds: options.timeoutSeconds ?? 29,
      output,
    }),
  );
  const child = spawn(process.execPath, [probe, specFile], {
    cwd: options.root,
    env: { ...options.env, LAMBDA_TASK_ROOT: options.root },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  child.stdout.on('data', (chunk: Buffer) => {
    text += chunk.toString('utf8');
  });
  child.stderr.on('data', (chunk: Buffer) => {
    text += chunk.toString('utf8');
  });
  const timeout = setTimeout(() => child.kill('SIGKILL'), ((options.timeoutSeconds ?? 29) + 15) * 1000);
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  clearTimeout(timeout);
  let outcome: Omit<FirstRequestOutcome, 'output'>;
  try {
    outcome = JSON.parse(readFileSync(output, 'utf8')) as Omit<FirstRequestOutcome, 'output'>;
  } catch {
    throw new Error(
      `${options.functionName}: the fresh process ended (${code}) without an outcome:\n${text}`,
    );
  }
  rmSync(specFile, { force: true });
  rmSync(output, { force: true });
  return { ...outcome, output: text };
}

const BUILTINS = new Set(builtinModules);

/** A loaded module as the bench names it: `node:x` for a builtin, else its path under `root`; undefined if outside `root`. */
export function loadedModuleName(url: string, root: string): string | undefined {
  if (url.startsWith('node:')) return url;
  if (BUILTINS.has(url)) return `node:${url}`;
  if (!url.startsWith('file:')) return undefined;
  const path = relative(root, fileURLToPath(url));
  return path.startsWith('..') || path.startsWith(sep) ? undefined : path.split(sep).join('/');
}
