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
    expect(httpFunctions).toHaveLength(9);
    for (const fn of httpFunctions) {
      const alarm = alarms().find((a) =>
        (a.Metrics as MetricQuery[] | undefined)?.some((query) =>
          query.MetricStat?.Metric.Dimensions.some(
            (d) => d.Name === 'function' && JSON.stringify(d.Value) === JSON.stringify({ Ref: fn }),
          ),
        ),
      );
      expect(alarm, fn).toBeDefined();
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

  it('notifies the SNS topic of the AlarmTopicArn parameter, or nobody when it is empty', () => {
    expect(template.Parameters.AlarmTopicArn).toMatchObject({ Type: 'String', Default: '' });
    expect(template.Conditions.NotifyAlarmTopic).toEqual({
      'Fn::Not': [{ 'Fn::Equals': [{ Ref: 'AlarmTopicArn' }, ''] }],
    });
    const all = alarms();
    expect(all.length).toBe(2 + 9 + 1);
    for (const alarm of all) {
      expect(alarm.AlarmActions).toEqual({
        'Fn::If': ['NotifyAlarmTopic', [{ Ref: 'AlarmTopicArn' }], { Ref: 'AWS::NoValue' }],
      });
      expect(alarm.OKActions).toEqual(alarm.AlarmActions);
    }
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
