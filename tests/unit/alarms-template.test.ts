import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MetricName } from '../../shared/core/metrics.js';
import { withPackagingLock } from '../support/packaged-service.js';

// The CloudFormation template as `npm run package` generates it (offline, no credentials), into a
// directory of this test's own, and never while another test packages (they share `.esbuild/`).
interface Resource {
  Type: string;
  Properties: Record<string, unknown>;
}
interface Template {
  Parameters: Record<string, { Type: string; Default?: string }>;
  Conditions: Record<string, unknown>;
  Resources: Record<string, Resource>;
}

let dir: string;
let template: Template;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'package-'));
  await withPackagingLock(() =>
    promisify(execFile)('npx', ['osls', 'package', '--stage', 'dev', '--package', dir], {
      maxBuffer: 16 * 1024 * 1024,
    }),
  );
  template = JSON.parse(await readFile(join(dir, 'cloudformation-template-update-stack.json'), 'utf8'));
}, 600_000);
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const ofType = (type: string) =>
  Object.entries(template.Resources).filter(([, resource]) => resource.Type === type);
const alarms = () => ofType('AWS::CloudWatch::Alarm').map(([, alarm]) => alarm.Properties);
/** The function's name in serverless.yml, from its resource's logical id (`DataGetDataLambdaFunction`). */
const functionName = (logicalId: string) =>
  logicalId.charAt(0).toLowerCase() + logicalId.slice(1).replace(/LambdaFunction$/, '');
/** The alarms on one metric of one dimension value. */
const alarmsOn = (namespace: string, metric: string, dimension: { Name: string; Value: unknown }) =>
  alarms().filter(
    (a) =>
      a.Namespace === namespace &&
      a.MetricName === metric &&
      JSON.stringify(a.Dimensions) === JSON.stringify([dimension]),
  );

interface MetricQuery {
  Id: string;
  Expression?: string;
  MetricStat?: {
    Metric: { Namespace: string; MetricName: string; Dimensions: { Name: string; Value: unknown }[] };
  };
}

describe('alarms in the packaged template', () => {
  it('alarms on every dead-letter queue holding a message', () => {
    const queues = ofType('AWS::SQS::Queue').map(([name]) => name);
    const deadLetterQueues = ofType('AWS::SQS::Queue')
      .map(
        ([, queue]) =>
          (queue.Properties.RedrivePolicy as { deadLetterTargetArn?: unknown })?.deadLetterTargetArn,
      )
      .filter(Boolean)
      .map((arn) => (arn as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0]);
    expect(deadLetterQueues.length).toBeGreaterThanOrEqual(2);
    for (const queue of deadLetterQueues) {
      expect(queues).toContain(queue);
      const alarm = alarms().find((a) =>
        (a.Dimensions as { Value: unknown }[] | undefined)?.some(
          (d) => JSON.stringify(d.Value) === JSON.stringify({ 'Fn::GetAtt': [queue, 'QueueName'] }),
        ),
      );
      expect(alarm, queue).toMatchObject({
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
      });
    }
  });

  it('alarms on the 5xx share of every HTTP function, from the service metrics of that function', () => {
    const httpFunctions = ofType('AWS::Lambda::Function')
      .map(([name]) => name)
      .filter((name) =>
        ofType('AWS::Lambda::Permission').some(
          ([, permission]) =>
            permission.Properties.Principal === 'apigateway.amazonaws.com' &&
            JSON.stringify(permission.Properties.FunctionName).includes(`"${name}"`),
        ),
      );
    expect(httpFunctions).toHaveLength(13);
    for (const fn of httpFunctions) {
      const alarm = alarms().find((a) =>
        (a.Metrics as MetricQuery[] | undefined)?.some((query) =>
          query.MetricStat?.Metric.Dimensions.some(
            (d) => d.Name === 'function' && JSON.stringify(d.Value) === JSON.stringify({ Ref: fn }),
          ),
        ),
      );
      expect(alarm, fn).toBeDefined();
      expect(alarm!.AlarmName).toBe(`erp-integration-gateway-dev-${functionName(fn)}-5xx-rate`);
      const metrics = (alarm!.Metrics as MetricQuery[]).filter((q) => q.MetricStat);
      expect(metrics.map((q) => q.MetricStat!.Metric.MetricName).sort()).toEqual(
        [MetricName.requests, MetricName.serverErrors].sort(),
      );
      expect(metrics[0]!.MetricStat!.Metric.Namespace).toBe('ErpIntegrationGateway');
      expect((alarm!.Metrics as MetricQuery[]).find((q) => q.Expression)?.Expression).toMatch(
        /100 \* errors \/ requests/,
      );
      expect(alarm!.Threshold).toBe(5);
    }
  });

  // What no handler can report: the invocation failed in Lambda (a crash at init, out of memory, the
  // function's time-out) or never ran (throttled). Generated per function (function-alarms.yml).
  it('alarms on Lambda errors and throttles of every function, from AWS/Lambda', () => {
    const functions = ofType('AWS::Lambda::Function').map(([name]) => name);
    expect(functions).toHaveLength(18);
    for (const fn of functions) {
      for (const [metric, suffix] of [
        ['Errors', 'errors'],
        ['Throttles', 'throttles'],
      ] as const) {
        const found = alarmsOn('AWS/Lambda', metric, { Name: 'FunctionName', Value: { Ref: fn } });
        expect(found, `${fn} ${metric}`).toHaveLength(1);
        expect(found[0]).toMatchObject({
          AlarmName: `erp-integration-gateway-dev-${functionName(fn)}-${suffix}`,
          Statistic: 'Sum',
          Period: 300,
          EvaluationPeriods: 1,
          Threshold: 0,
          ComparisonOperator: 'GreaterThanThreshold',
        });
      }
    }
  });

  it("alarms on the HTTP API's own 5xx share, only from a minimum of requests", () => {
    expect(template.Resources.HttpApi?.Type).toBe('AWS::ApiGatewayV2::Api');
    const gateway = alarms().filter((a) =>
      (a.Metrics as MetricQuery[] | undefined)?.some(
        (q) => q.MetricStat?.Metric.Namespace === 'AWS/ApiGateway',
      ),
    );
    expect(gateway).toHaveLength(1);
    const alarm = gateway[0]!;
    const queries = alarm.Metrics as (MetricQuery & { MetricStat?: { Stat: string; Period: number } })[];
    const byId = Object.fromEntries(queries.map((q) => [q.Id, q]));
    // HTTP API's metrics are `5xx` and `Count` (not REST's 5XXError), by ApiId: the one stage's.
    expect(byId.errors?.MetricStat).toMatchObject({
      Metric: {
        Namespace: 'AWS/ApiGateway',
        MetricName: '5xx',
        Dimensions: [{ Name: 'ApiId', Value: { Ref: 'HttpApi' } }],
      },
      Stat: 'Sum',
      Period: 300,
    });
    expect(byId.requests?.MetricStat).toMatchObject({
      Metric: {
        Namespace: 'AWS/ApiGateway',
        MetricName: 'Count',
        Dimensions: [{ Name: 'ApiId', Value: { Ref: 'HttpApi' } }],
      },
      Stat: 'Sum',
      Period: 300,
    });
    const returned = queries.filter((q) => (q as { ReturnData?: boolean }).ReturnData);
    expect(returned.map((q) => q.Id)).toEqual(['rate']);
    // Below httpApiServerErrorMinRequests (10) requests the rate is 0: one 5xx of two is no outage.
    expect(byId.rate?.Expression).toBe('IF(requests >= 10, 100 * FILL(errors, 0) / requests, 0)');
    expect(alarm).toMatchObject({
      AlarmName: 'erp-integration-gateway-dev-http-api-5xx-rate',
      Threshold: 5,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it('alarms on a Web API job left waiting in its queue', () => {
    const found = alarmsOn('AWS/SQS', 'ApproximateAgeOfOldestMessage', {
      Name: 'QueueName',
      Value: { 'Fn::GetAtt': ['WebApiJobQueue', 'QueueName'] },
    });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({
      AlarmName: 'erp-integration-gateway-dev-WebApiJobQueue-oldest-message-age',
      Statistic: 'Maximum',
      Threshold: 900,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it('alarms on the webhook failure share', () => {
    const alarm = alarms().find((a) =>
      (a.Metrics as MetricQuery[] | undefined)?.some(
        (q) => q.MetricStat?.Metric.MetricName === MetricName.webhookFailures,
      ),
    );
    expect(alarm).toBeDefined();
    const names = (alarm!.Metrics as MetricQuery[]).flatMap((q) => q.MetricStat?.Metric.MetricName ?? []);
    expect(names.sort()).toEqual([MetricName.webhookAttempts, MetricName.webhookFailures].sort());
  });

  it('alarms when a webhook endpoint is disabled', () => {
    const alarm = alarms().find((a) => a.MetricName === MetricName.webhookEndpointDisabled);
    expect(alarm).toMatchObject({
      Namespace: 'ErpIntegrationGateway',
      Dimensions: [{ Name: 'service', Value: 'erp-integration-gateway' }],
      Statistic: 'Sum',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it("alarms on requests refused for their tenant's share, and on requests the load table could not count", () => {
    const byName = (name: string) =>
      alarms().find((alarm) => alarm.AlarmName === `erp-integration-gateway-dev-${name}`);
    expect(byName('tenant-throttled')).toMatchObject({
      Namespace: 'ErpIntegrationGateway',
      MetricName: 'TenantThrottled',
      Dimensions: [{ Name: 'service', Value: 'erp-integration-gateway' }],
      Statistic: 'Sum',
      Period: 300,
      Threshold: 100,
      ComparisonOperator: 'GreaterThanThreshold',
    });
    expect(byName('tenant-limits-unavailable')).toMatchObject({
      MetricName: 'TenantLimitsUnavailable',
      Statistic: 'Sum',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it("alarms on any statement refused for a permission the service's database login lacks", () => {
    const alarm = alarms().find(
      (candidate) => candidate.AlarmName === 'erp-integration-gateway-dev-database-permission-denied',
    );
    expect(alarm).toMatchObject({
      Namespace: 'ErpIntegrationGateway',
      MetricName: 'DatabasePermissionDenied',
      Dimensions: [{ Name: 'service', Value: 'erp-integration-gateway' }],
      Statistic: 'Sum',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it('notifies the SNS topic of the AlarmTopicArn parameter, or nobody when it is empty', () => {
    expect(template.Parameters.AlarmTopicArn).toMatchObject({ Type: 'String', Default: '' });
    expect(template.Conditions.NotifyAlarmTopic).toEqual({
      'Fn::Not': [{ 'Fn::Equals': [{ Ref: 'AlarmTopicArn' }, ''] }],
    });
    const all = alarms();
    // Dead-letter queues, 5xx share per HTTP function, Lambda errors and throttles per function,
    // webhook failures, webhook endpoints disabled, HTTP API 5xx, job queue age, tenants throttled,
    // tenants' load table unavailable, database permissions denied.
    expect(all.length).toBe(3 + 13 + 18 + 18 + 1 + 1 + 1 + 1 + 1 + 1 + 1);
    expect(new Set(all.map((alarm) => alarm.AlarmName)).size).toBe(all.length);
    for (const alarm of all) {
      expect(alarm.TreatMissingData).toBe('notBreaching');
      expect(alarm.AlarmActions).toEqual({
        'Fn::If': ['NotifyAlarmTopic', [{ Ref: 'AlarmTopicArn' }], { Ref: 'AWS::NoValue' }],
      });
      expect(alarm.OKActions).toEqual(alarm.AlarmActions);
    }
  });

  it('writes an access log of the HTTP API stage: JSON lines with the request ids, to a log group kept 30 days', () => {
    const stage = template.Resources.HttpApiStage!;
    expect(stage.Type).toBe('AWS::ApiGatewayV2::Stage');
    const settings = stage.Properties.AccessLogSettings as { DestinationArn: unknown; Format: string };
    expect(settings.DestinationArn).toEqual({ 'Fn::GetAtt': ['HttpApiLogGroup', 'Arn'] });
    expect(template.Resources.HttpApiLogGroup).toEqual({
      Type: 'AWS::Logs::LogGroup',
      Properties: { LogGroupName: '/aws/http-api/erp-integration-gateway-dev', RetentionInDays: 30 },
    });
    // One line, valid JSON once API Gateway has put the values in (each quoted: a missing one is "-").
    expect(settings.Format).not.toContain('\n');
    const format = JSON.parse(settings.Format) as Record<string, string>;
    expect(format).toMatchObject({
      requestId: '$context.requestId',
      // The function's request id: its log lines' and its error answers' requestId.
      lambdaRequestId: '$context.integration.requestId',
      ip: '$context.identity.sourceIp',
      method: '$context.httpMethod',
      path: '$context.path',
      route: '$context.routeKey',
      status: '$context.status',
      latencyMs: '$context.responseLatency',
      integrationStatus: '$context.integration.integrationStatus',
      integrationError: '$context.integrationErrorMessage',
      error: '$context.error.message',
    });
    for (const value of Object.values(format)) expect(value).toMatch(/^\$context\.[A-Za-z.]+$/);
  });

  it('throttles every route of the HTTP API stage (httpApiThrottleBurst, httpApiThrottleRate)', () => {
    expect(template.Resources.HttpApiStage!.Properties.DefaultRouteSettings).toEqual({
      DetailedMetricsEnabled: false,
      ThrottlingBurstLimit: 2000,
      ThrottlingRateLimit: 1000,
    });
  });

  it('gives every function the service name, metrics namespace and log level the alarms and logs rely on', () => {
    for (const [name, fn] of ofType('AWS::Lambda::Function')) {
      const env = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      expect(env, name).toMatchObject({
        POWERTOOLS_SERVICE_NAME: 'erp-integration-gateway',
        POWERTOOLS_METRICS_NAMESPACE: 'ErpIntegrationGateway',
        LOG_LEVEL: 'INFO',
      });
    }
  });
});
