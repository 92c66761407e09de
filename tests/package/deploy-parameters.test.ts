import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readServerlessConfig } from '../../infra/local/serverless-config.js';
import { withPackagingLock } from '../support/packaged-service.js';
import { stackCondition } from '../support/stack-conditions.js';

/**
 * Every documented deploy parameter reaches everything that depends on it, IAM included: the
 * service is packaged with every parameter of the table in docs/operations.md overridden, and the template must
 * carry each new value wherever the value matters, and nowhere the default.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Template = {
  Parameters: Record<string, { Default?: string }>;
  Conditions?: Record<string, Json>;
  Resources: Record<string, { Type: string; Properties: Record<string, Json> }>;
};

const OVERRIDES: Record<string, string> = {
  vpcSubnetIds: 'subnet-0aaa1111,subnet-0bbb2222',
  vpcSecurityGroupIds: 'sg-0ccc3333',
  alarmTopicArn: 'arn:aws:sns:eu-west-1:210987654321:ops-pager',
  tenantRegistrySecretId: 'tenants/prod-registry',
  logLevel: 'DEBUG',
  metricsNamespace: 'AcmeGateway',
  dataApiPrefix: 'DataV2',
  publicBaseUrl: 'https://erp-api.acme.example',
  webApiPrefix: 'WebV2',
  webhookRetrySchedule: '7,70,700',
  webhookMaxAttempts: '4',
  webhookMaxReceives: '12',
  webhookSecretOverlapHours: '48',
  webhookDisableAfterHours: '72.5',
  webApiJobWorkerTimeout: '120',
  webApiJobVisibility: '720',
  webApiJobMaxAttempts: '2',
  webApiJobMaxReceives: '5',
  webApiJobStaleSeconds: '4000',
  changeRetentionSchedule: 'rate(6 hours)',
  serverErrorRatePercent: '7',
  httpApiServerErrorMinRequests: '25',
  webhookFailureRatePercent: '33',
  webApiJobAgeAlarmSeconds: '1200',
  httpApiThrottleBurst: '40',
  httpApiThrottleRate: '12.5',
  requestFunctionConcurrency: '3',
  jobWorkerConcurrency: '7',
  webhookConcurrency: '4',
  tenantConcurrentRequests: '2',
  tenantRequestsPerSecond: '6',
  tenantLimitsTimeoutMs: '250',
  tenantThrottledAlarmCount: '40',
};
/** The registry in SSM instead: the parameters that only matter then. */
const SSM_OVERRIDES: Record<string, string> = {
  tenantRegistryParameter: '/acme/prod/tenants',
  tenantRegistryKmsKeyArn: 'arn:aws:kms:eu-central-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab',
};

const work = mkdtempSync(join(tmpdir(), 'package-params-'));

/** `osls package --stage prod` with these params, into its own folder; the template answered. */
async function packageWith(params: Record<string, string>, name: string): Promise<Template> {
  const out = join(work, name);
  const args = Object.entries(params).map(([key, value]) => `--param=${key}=${value}`);
  const result = await withPackagingLock(() =>
    spawnSync('npx', ['osls', 'package', '--stage', 'prod', '--package', out, ...args], {
      encoding: 'utf8',
      timeout: 300_000,
    }),
  );
  if (result.status !== 0) throw new Error(`packaging failed:\n${result.stdout}\n${result.stderr}`);
  return JSON.parse(readFileSync(join(out, 'cloudformation-template-update-stack.json'), 'utf8')) as Template;
}

/**
 * The template as CloudFormation would deploy it with the parameters' defaults: conditions
 * evaluated, `Fn::If` replaced by the branch taken, `AWS::NoValue` removed.
 */
function asDeployed(template: Template): Template {
  const value = (operand: unknown): unknown => {
    if (operand && typeof operand === 'object' && !Array.isArray(operand) && 'Ref' in operand) {
      return template.Parameters[operand.Ref as string]?.Default ?? null;
    }
    return operand;
  };
  const condition = (name: string) => stackCondition(template.Conditions ?? {}, name, value);
  const NO_VALUE = Symbol('AWS::NoValue');
  const walk = (node: Json): Json | typeof NO_VALUE => {
    if (Array.isArray(node)) return node.map(walk).filter((item): item is Json => item !== NO_VALUE);
    if (!node || typeof node !== 'object') return node;
    if ('Ref' in node && node.Ref === 'AWS::NoValue') return NO_VALUE;
    if ('Fn::If' in node) {
      const [name, then, otherwise] = node['Fn::If'] as [string, Json, Json];
      return walk(condition(name) ? then : otherwise);
    }
    return Object.fromEntries(
      Object.entries(node)
        .map(([key, inner]) => [key, walk(inner)] as const)
        .filter(([, inner]) => inner !== NO_VALUE),
    ) as Json;
  };
  return {
    ...template,
    Resources: walk(template.Resources as unknown as Json) as unknown as Template['Resources'],
  };
}

const ofType = (template: Template, type: string) =>
  Object.entries(template.Resources).filter(([, resource]) => resource.Type === type);

interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: Json;
}
const statementsOf = (role: Template['Resources'][string]) =>
  (role.Properties.Policies as unknown as { PolicyDocument: { Statement: Statement[] } }[]).flatMap(
    (policy) => policy.PolicyDocument.Statement,
  );
const actions = (statement: Statement) => [statement.Action].flat();
const grantsOf = (role: Template['Resources'][string], action: string) =>
  statementsOf(role).filter((statement) => actions(statement).includes(action));

/** The logical ids of the functions the HTTP API invokes. */
const httpFunctions = (template: Template) =>
  new Set(
    ofType(template, 'AWS::Lambda::Permission')
      .filter(([, permission]) => permission.Properties.Principal === 'apigateway.amazonaws.com')
      .map(
        ([, permission]) =>
          (permission.Properties.FunctionName as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0],
      ),
  );

/** Each Lambda function's logical id with its role's logical id. */
const functionRoles = (template: Template) =>
  ofType(template, 'AWS::Lambda::Function').map(([id, fn]) => {
    const role = fn.Properties.Role as { 'Fn::GetAtt': [string, string] };
    return { id, role: role['Fn::GetAtt'][0] };
  });

let overridden: Template;
let inParameterStore: Template;

beforeAll(async () => {
  overridden = await packageWith(OVERRIDES, 'secrets-manager');
  inParameterStore = await packageWith({ ...OVERRIDES, ...SSM_OVERRIDES }, 'parameter-store');
}, 600_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('deploy parameters', () => {
  it('overrides every parameter that docs/operations.md documents, and it documents every one', () => {
    const readme = readFileSync('docs/operations.md', 'utf8');
    const table = readme.slice(readme.indexOf('| parameter (`--param="name=value"`)'));
    const rows = table.slice(0, table.indexOf('\n\n')).split('\n').slice(2);
    const documented = rows.flatMap((row) =>
      [...(row.split('|')[1] ?? '').matchAll(/`(\w+)`/g)].map((m) => m[1]!),
    );
    const declared = Object.keys(readServerlessConfig().params.default);
    expect(documented.sort()).toEqual(declared.sort());
    expect(Object.keys({ ...OVERRIDES, ...SSM_OVERRIDES }).sort()).toEqual(declared.sort());
  });

  it('leaves no default value in the template where a parameter was given', () => {
    const text = JSON.stringify(overridden);
    for (const stale of [
      'erp-gateway/prod/tenant-registry',
      'ErpIntegrationGateway',
      '/JsonAPI/',
      '/WebAPI/',
      '5,30,120',
    ]) {
      expect(text, stale).not.toContain(stale);
    }
    expect(readFileSync('serverless.yml', 'utf8')).not.toContain('${self:params.default');
  });

  it('gives the VPC and the alarm topic to the stack parameters CloudFormation checks', () => {
    expect(overridden.Parameters.VpcSubnetIds?.Default).toBe(OVERRIDES.vpcSubnetIds);
    expect(overridden.Parameters.VpcSecurityGroupIds?.Default).toBe(OVERRIDES.vpcSecurityGroupIds);
    expect(overridden.Parameters.AlarmTopicArn?.Default).toBe(OVERRIDES.alarmTopicArn);
    for (const [id, fn] of ofType(overridden, 'AWS::Lambda::Function')) {
      expect(JSON.stringify(fn.Properties.VpcConfig), id).toContain('"Ref":"VpcSubnetIds"');
      expect(JSON.stringify(fn.Properties.VpcConfig), id).toContain('"Ref":"VpcSecurityGroupIds"');
    }
  });

  it('points every function and every role at the overridden registry secret, by its ARN pattern', () => {
    const deployed = asDeployed(overridden);
    for (const { id, role } of functionRoles(deployed)) {
      const env = deployed.Resources[id]!.Properties.Environment as { Variables: Record<string, Json> };
      expect(env.Variables.TENANT_REGISTRY_SECRET_ID, id).toBe(OVERRIDES.tenantRegistrySecretId);
      expect(env.Variables.TENANT_REGISTRY_PARAMETER, id).toBeUndefined();
      const grants = grantsOf(deployed.Resources[role]!, 'secretsmanager:GetSecretValue');
      expect(
        grants.map((grant) => grant.Resource),
        role,
      ).toEqual([
        {
          'Fn::Sub':
            'arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:tenants/prod-registry-??????',
        },
      ]);
      expect(grantsOf(deployed.Resources[role]!, 'ssm:GetParameter'), role).toEqual([]);
      expect(grantsOf(deployed.Resources[role]!, 'kms:Decrypt'), role).toEqual([]);
    }
  });

  it('points every function and every role at the SSM parameter and its key when the registry is there', () => {
    const deployed = asDeployed(inParameterStore);
    for (const { id, role } of functionRoles(deployed)) {
      const env = deployed.Resources[id]!.Properties.Environment as { Variables: Record<string, Json> };
      expect(env.Variables.TENANT_REGISTRY_PARAMETER, id).toBe(SSM_OVERRIDES.tenantRegistryParameter);
      expect(env.Variables.TENANT_REGISTRY_SECRET_ID, id).toBeUndefined();
      const roleResource = deployed.Resources[role]!;
      expect(
        grantsOf(roleResource, 'ssm:GetParameter').map((grant) => grant.Resource),
        role,
      ).toEqual([
        {
          'Fn::Sub': 'arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter/acme/prod/tenants',
        },
      ]);
      expect(
        grantsOf(roleResource, 'kms:Decrypt').map((grant) => grant.Resource),
        role,
      ).toEqual([SSM_OVERRIDES.tenantRegistryKmsKeyArn]);
      expect(grantsOf(roleResource, 'secretsmanager:GetSecretValue'), role).toEqual([]);
    }
  });

  it('lets each function write only its own log group, and names ARNs by partition', () => {
    const deployed = asDeployed(overridden);
    for (const { id, role } of functionRoles(deployed)) {
      const logGroup = `${id.replace(/LambdaFunction$/, '')}LogGroup`;
      const writes = grantsOf(deployed.Resources[role]!, 'logs:PutLogEvents').flatMap((grant) =>
        [grant.Resource].flat(),
      );
      expect(writes, id).toContainEqual({ 'Fn::GetAtt': [logGroup, 'Arn'] });
    }
    for (const [id, role] of ofType(deployed, 'AWS::IAM::Role')) {
      for (const statement of statementsOf(role)) {
        expect([statement.Resource].flat(), id).not.toContain('*');
      }
      expect(JSON.stringify(role.Properties.ManagedPolicyArns), id).not.toContain(
        'AWSLambdaVPCAccessExecutionRole',
      );
    }
    const { Parameters: _given, ...rest } = deployed;
    expect(JSON.stringify(rest)).not.toMatch(/"arn:aws:/);
  });

  it('grants S3 only to the functions that store large answers, each under its own prefix', () => {
    const deployed = asDeployed(overridden);
    const s3Prefixes = Object.fromEntries(
      functionRoles(deployed).map(({ id, role }) => [
        id.replace(/LambdaFunction$/, ''),
        grantsOf(deployed.Resources[role]!, 's3:PutObject').map((grant) => JSON.stringify(grant.Resource)),
      ]),
    );
    const under = (prefix: string) => [JSON.stringify({ 'Fn::Sub': `\${LargeAnswerBucket.Arn}/${prefix}` })];
    expect(s3Prefixes).toEqual({
      DataGetData: under('answers/*'),
      DataGetDataWithCondition: under('answers/*'),
      DataGetRowsCount: under('answers/*'),
      DataGetDataPaginate: under('answers/*'),
      DataGetChanges: under('answers/*'),
      // The retention clean-up answers no one: no S3.
      ChangeFeedRetention: [],
      // The description answers inline: a role of its own, without S3.
      DataOpenApi: [],
      FileGetFile: under('answers/*/files/*'),
      FileSetFile: [],
      DeliverWebhook: [],
      WebhookAdmin: [],
      // Change notifications answer inline and send to their queue: no S3.
      DataSubscriptions: [],
      // The authorization server answers inline, with no database: no S3.
      AuthorizationServer: [],
      ChangeNotifier: [],
      WebTest: [],
      WebGetData: under('answers/*/web-api/*'),
      WebGetDataAsync: under('answers/*/web-api/*'),
      WebJobWorker: [],
    });
  });

  it('runs the change feed retention clean-up on the schedule of changeRetentionSchedule', () => {
    const rules = ofType(overridden, 'AWS::Events::Rule').map(([, rule]) => rule.Properties);
    expect(rules).toHaveLength(1);
    expect(rules[0]).toMatchObject({ ScheduleExpression: 'rate(6 hours)', State: 'ENABLED' });
    expect(JSON.stringify(rules[0]!.Targets)).toContain('ChangeFeedRetentionLambdaFunction');
  });

  it('carries the log level, metrics namespace and alarm thresholds', () => {
    for (const [id, fn] of ofType(overridden, 'AWS::Lambda::Function')) {
      const env = (fn.Properties.Environment as { Variables: Record<string, Json> }).Variables;
      expect(env.LOG_LEVEL, id).toBe('DEBUG');
      expect(env.POWERTOOLS_METRICS_NAMESPACE, id).toBe('AcmeGateway');
      // The gateway's tokens' iss and aud (CONTRACT 4d) are the same in every function.
      expect(env.PUBLIC_BASE_URL, id).toBe('https://erp-api.acme.example');
    }
    const alarms = ofType(overridden, 'AWS::CloudWatch::Alarm').map(([, alarm]) => alarm.Properties);
    const thresholds = alarms.filter((alarm) => alarm.Metrics).map((alarm) => String(alarm.Threshold));
    expect(new Set(thresholds)).toEqual(new Set(['7', '33']));
    const namespaces = alarms.flatMap((alarm) =>
      ((alarm.Metrics as { MetricStat?: { Metric: { Namespace: string } } }[] | undefined) ?? []).flatMap(
        (metric) => (metric.MetricStat ? [metric.MetricStat.Metric.Namespace] : []),
      ),
    );
    expect(namespaces.length).toBeGreaterThan(0);
    // The service's own metrics; AWS's (AWS/ApiGateway, AWS/Lambda, AWS/SQS) keep their namespaces.
    expect(new Set(namespaces.filter((namespace) => !namespace.startsWith('AWS/')))).toEqual(
      new Set(['AcmeGateway']),
    );
  });

  it('gives the HTTP API alarm its minimum of requests, the job queue alarm its age', () => {
    const alarms = ofType(overridden, 'AWS::CloudWatch::Alarm').map(([, alarm]) => alarm.Properties);
    const gateway = alarms.find((alarm) => String(alarm.AlarmName).endsWith('-http-api-5xx-rate'))!;
    const expressions = (gateway.Metrics as { Expression?: string }[]).flatMap((q) => q.Expression ?? []);
    expect(expressions).toEqual(['IF(requests >= 25, 100 * FILL(errors, 0) / requests, 0)']);
    expect(String(gateway.Threshold)).toBe('7');
    const age = alarms.find((alarm) => alarm.MetricName === 'ApproximateAgeOfOldestMessage')!;
    expect(String(age.Threshold)).toBe('1200');
  });

  it('throttles every route of the HTTP API stage as given', () => {
    const settings = overridden.Resources.HttpApiStage!.Properties.DefaultRouteSettings as Record<
      string,
      Json
    >;
    // A --param value is a string; CloudFormation takes "40" for an integer, "12.5" for a double.
    expect(Number(settings.ThrottlingBurstLimit)).toBe(40);
    expect(Number(settings.ThrottlingRateLimit)).toBe(12.5);
  });

  it('reserves the given concurrency for every HTTP function, and caps the batches of each queue worker at once', () => {
    const functions = ofType(overridden, 'AWS::Lambda::Function');
    const http = httpFunctions(overridden);
    expect(http.size).toBe(13);
    for (const [id, fn] of functions) {
      // A --param value is a string; CloudFormation takes "3" for an integer property.
      const reserved = fn.Properties.ReservedConcurrentExecutions;
      if (http.has(id)) expect(Number(reserved), id).toBe(3);
      // The webhook admin: one instance at once, whatever the parameters.
      else if (id === 'WebhookAdminLambdaFunction') expect(Number(reserved), id).toBe(1);
      // The change feed's retention clean-up: one run at a time.
      else if (id === 'ChangeFeedRetentionLambdaFunction') expect(Number(reserved), id).toBe(1);
      // The workers' bound is their event source's: a reserved concurrency would throttle the
      // poller, and a throttled batch goes back to its queue as a failed receive.
      else expect(reserved, id).toBeUndefined();
    }
    const mappings = ofType(overridden, 'AWS::Lambda::EventSourceMapping')
      .map(([, mapping]) => [
        (mapping.Properties.FunctionName as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0],
        (mapping.Properties.EventSourceArn as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0],
        Number((mapping.Properties.ScalingConfig as { MaximumConcurrency: Json }).MaximumConcurrency),
      ])
      .sort((a, b) => `${a[0]}${a[1]}`.localeCompare(`${b[0]}${b[1]}`));
    expect(mappings).toEqual([
      ['ChangeNotifierLambdaFunction', 'ChangeNotificationQueue', 4],
      ['ChangeNotifierLambdaFunction', 'ChangeNotificationSlowQueue', 4],
      // The passes: never more than two batches at once, whatever the parameters.
      ['ChangeNotifierLambdaFunction', 'NotifierPassQueue', 2],
      ['DeliverWebhookLambdaFunction', 'DocumentReceivedQueue', 4],
      ['DeliverWebhookLambdaFunction', 'DocumentReceivedSlowQueue', 4],
      ['WebJobWorkerLambdaFunction', 'WebApiJobQueue', 7],
    ]);
    // Each instance's pool: the formula of docs/sql-server.md "Connections to SQL Server" multiplies these.
    const pools = Object.fromEntries(
      functions.map(([id, fn]) => [
        id,
        Number((fn.Properties.Environment as { Variables: Record<string, Json> }).Variables.DB_POOL_MAX),
      ]),
    );
    expect(pools).toEqual({
      DataGetDataLambdaFunction: 1,
      DataGetDataWithConditionLambdaFunction: 1,
      DataGetRowsCountLambdaFunction: 1,
      DataGetDataPaginateLambdaFunction: 1,
      DataGetChangesLambdaFunction: 1,
      ChangeFeedRetentionLambdaFunction: 1,
      DataOpenApiLambdaFunction: 1,
      FileGetFileLambdaFunction: 1,
      FileSetFileLambdaFunction: 1,
      DeliverWebhookLambdaFunction: 10,
      WebhookAdminLambdaFunction: 1,
      DataSubscriptionsLambdaFunction: 1,
      // The provider's default; the authorization server opens no database.
      AuthorizationServerLambdaFunction: 1,
      ChangeNotifierLambdaFunction: 10,
      WebTestLambdaFunction: 1,
      WebGetDataLambdaFunction: 2,
      WebGetDataAsyncLambdaFunction: 1,
      WebJobWorkerLambdaFunction: 5,
    });
  });

  it("gives every HTTP function the tenants' share, the load table and its capacity, and only them the table", () => {
    const functions = ofType(overridden, 'AWS::Lambda::Function');
    const roles = new Map(functionRoles(overridden).map(({ id, role }) => [id, role]));
    const http = httpFunctions(overridden);
    for (const [id, fn] of functions) {
      const variables = (fn.Properties.Environment as { Variables: Record<string, Json> }).Variables;
      expect(variables.TENANT_CONCURRENT_REQUESTS, id).toBe('2');
      expect(variables.TENANT_REQUESTS_PER_SECOND, id).toBe('6');
      expect(variables.TENANT_LIMITS_TIMEOUT_MS, id).toBe('250');
      expect(variables.REQUEST_FUNCTION_CONCURRENCY, id).toBe('3');
      expect(variables.TENANT_LIMITS_TABLE, id).toEqual({ Ref: 'TenantLimitsTable' });
      const grants = grantsOf(overridden.Resources[roles.get(id)!]!, 'dynamodb:UpdateItem');
      if (http.has(id)) {
        expect(
          grants.map((grant) => grant.Resource),
          id,
        ).toEqual([{ 'Fn::GetAtt': ['TenantLimitsTable', 'Arn'] }]);
        expect(actions(grants[0]!).sort(), id).toEqual(['dynamodb:GetItem', 'dynamodb:UpdateItem']);
      } else {
        expect(grants, id).toEqual([]);
      }
    }
    const table = overridden.Resources.TenantLimitsTable!;
    expect(table.Type).toBe('AWS::DynamoDB::Table');
    expect(table.Properties.BillingMode).toBe('PAY_PER_REQUEST');
    expect(table.Properties.TimeToLiveSpecification).toEqual({ AttributeName: 'expiresAt', Enabled: true });
    const alarm = overridden.Resources.TenantThrottledAlarm!;
    expect(Number(alarm.Properties.Threshold)).toBe(40);
    expect(alarm.Properties.MetricName).toBe('TenantThrottled');
  });

  it('gives the webhook function the rotation overlap and the disabling time, and the admin function the queue', () => {
    const functions = Object.fromEntries(ofType(overridden, 'AWS::Lambda::Function'));
    const variables = (id: string) =>
      (functions[id]!.Properties.Environment as { Variables: Record<string, Json> }).Variables;
    expect(variables('DeliverWebhookLambdaFunction')).toMatchObject({
      WEBHOOK_SECRET_OVERLAP_HOURS: OVERRIDES.webhookSecretOverlapHours,
      WEBHOOK_DISABLE_AFTER_HOURS: OVERRIDES.webhookDisableAfterHours,
    });
    expect(variables('WebhookAdminLambdaFunction').DOCUMENT_RECEIVED_QUEUE_URL).toEqual({
      Ref: 'DocumentReceivedQueue',
    });
    // Sending to that queue (and, for `notify`, the change notifications') and nothing else of SQS.
    const role = String(
      (functions.WebhookAdminLambdaFunction!.Properties.Role as { 'Fn::GetAtt': [string, string] })[
        'Fn::GetAtt'
      ][0],
    );
    const sqsGrants = statementsOf(overridden.Resources[role]!).filter((statement) =>
      [statement.Action].flat().some((action) => String(action).startsWith('sqs:')),
    );
    expect(sqsGrants.map((grant) => [grant.Action, grant.Resource])).toEqual([
      [
        'sqs:SendMessage',
        [
          { 'Fn::GetAtt': ['DocumentReceivedQueue', 'Arn'] },
          { 'Fn::GetAtt': ['ChangeNotificationQueue', 'Arn'] },
        ],
      ],
    ]);
  });

  it('routes the HTTP API under the overridden prefixes', () => {
    const routes = ofType(overridden, 'AWS::ApiGatewayV2::Route').map(([, route]) =>
      String(route.Properties.RouteKey),
    );
    const events = Object.values(readServerlessConfig().functions).flatMap((fn) =>
      (fn.events ?? []).filter((e) => e.httpApi),
    );
    expect(routes.length).toBe(events.length);
    // The authorization server's routes are the OAuth 2.0 ones, beside the prefixes (CONTRACT 4d),
    // its metadata also at RFC 8414's location for the issuer https://host/{tenant}.
    for (const route of routes) {
      expect(route).toMatch(
        /^(GET|POST|DELETE) (\/\{tenant\}\/((DataV2|WebV2)\/|oauth2\/token$|\.well-known\/(jwks\.json|oauth-authorization-server)$)|\/\.well-known\/oauth-authorization-server\/\{tenant\}$)/,
      );
    }
    expect(routes).toContain('GET /.well-known/oauth-authorization-server/{tenant}');
  });

  it('sizes the queues and the job worker from the overridden values', () => {
    const resource = (id: string) => overridden.Resources[id]!.Properties;
    const env = (id: string) => (resource(id).Environment as { Variables: Record<string, Json> }).Variables;
    expect(env('DeliverWebhookLambdaFunction')).toMatchObject({
      WEBHOOK_RETRY_SCHEDULE: '7,70,700',
      WEBHOOK_MAX_RECEIVES: '12',
      DOCUMENT_RECEIVED_DEAD_LETTER_QUEUE_URL: { Ref: 'DocumentReceivedDeadLetterQueue' },
    });
    // A --param value is a string; CloudFormation takes "12" for an integer property.
    expect(
      Number((resource('DocumentReceivedQueue').RedrivePolicy as { maxReceiveCount: Json }).maxReceiveCount),
    ).toBe(12);
    expect(Number(resource('WebJobWorkerLambdaFunction').Timeout)).toBe(120);
    expect(env('WebJobWorkerLambdaFunction')).toMatchObject({
      WEB_API_JOB_MAX_ATTEMPTS: '2',
      WEB_API_JOB_MAX_RECEIVES: '5',
      WEB_API_JOB_LEASE_SECONDS: '120',
      WEB_API_JOB_STALE_SECONDS: '4000',
      WEB_API_JOB_DEAD_LETTER_QUEUE_URL: { Ref: 'WebApiJobDeadLetterQueue' },
    });
    expect(env('WebGetDataLambdaFunction').WEB_API_JOB_STALE_SECONDS).toBe('4000');
    expect(env('WebGetDataAsyncLambdaFunction').WEB_API_JOB_STALE_SECONDS).toBe('4000');
    expect(Number(resource('WebApiJobQueue').VisibilityTimeout)).toBe(720);
    expect(
      Number((resource('WebApiJobQueue').RedrivePolicy as { maxReceiveCount: Json }).maxReceiveCount),
    ).toBe(5);
  });

  it('lets the consumers send only to their own slow lane and dead-letter queue, and getDataAsync only to the job queue', () => {
    const deployed = asDeployed(overridden);
    const sends = Object.fromEntries(
      functionRoles(deployed).map(({ id, role }) => [
        id.replace(/LambdaFunction$/, ''),
        grantsOf(deployed.Resources[role]!, 'sqs:SendMessage').map((grant) => grant.Resource),
      ]),
    );
    expect(sends).toMatchObject({
      DeliverWebhook: [
        [
          { 'Fn::GetAtt': ['DocumentReceivedSlowQueue', 'Arn'] },
          { 'Fn::GetAtt': ['DocumentReceivedDeadLetterQueue', 'Arn'] },
        ],
      ],
      WebJobWorker: [{ 'Fn::GetAtt': ['WebApiJobDeadLetterQueue', 'Arn'] }],
      WebGetDataAsync: [{ 'Fn::GetAtt': ['WebApiJobQueue', 'Arn'] }],
      WebGetData: [],
      WebTest: [],
    });
  });
});
