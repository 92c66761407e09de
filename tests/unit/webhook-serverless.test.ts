import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';
import { DOCUMENT_RECEIVED_QUEUE, localQueues } from '../../infra/local/queues.js';
import { cloudFormationTags as cfnTags } from '../../infra/local/serverless-config.js';
import { DEFAULT_WEBHOOK_RETRY_SCHEDULE } from '../../shared/config/webhook.js';
import {
  MAX_RETRY_DELAY_SECONDS,
  parseRetrySchedule,
  RETRY_JITTER,
} from '../../shared/core/delivery/retry-policy.js';

const load = (file: string) =>
  // biome-ignore lint/suspicious/noExplicitAny: a parsed YAML document
  parse(readFileSync(file, 'utf8'), { customTags: cfnTags as never }) as any;

/** A Serverless Framework variable reference as written in the YAML, e.g. `${param:x}`. */
const variable = (reference: string) => `\${${reference}}`;

const service = load('serverless.yml');
const resources = load('infra/resources/webhook.yml').Resources;
const params = service.params.default as Record<string, string | number>;
const schedule = parseRetrySchedule(String(params.webhookRetrySchedule));
const fn = service.functions.deliverWebhook;
const queue = resources.DocumentReceivedQueue.Properties;

describe('serverless.yml: receipt webhook', () => {
  it('includes infra/resources/webhook.yml', () => {
    expect(service.resources).toContain(variable('file(infra/resources/webhook.yml)'));
  });

  it('deploys the production schedule and refuses private targets', () => {
    expect(params.webhookRetrySchedule).toBe(DEFAULT_WEBHOOK_RETRY_SCHEDULE);
    expect(fn.environment.WEBHOOK_RETRY_SCHEDULE).toBe(variable('param:webhookRetrySchedule'));
    expect(fn.environment.WEBHOOK_ALLOW_PRIVATE_TARGETS).toBe('false');
    expect(fn.environment.DOCUMENT_RECEIVED_QUEUE_URL).toEqual({ 'Fn::Ref': 'DocumentReceivedQueue' });
    expect(fn.environment.DOCUMENT_RECEIVED_DEAD_LETTER_QUEUE_URL).toEqual({
      'Fn::Ref': 'DocumentReceivedDeadLetterQueue',
    });
  });

  it('leaves the queue room beyond the attempts of the schedule for receives that never reach the function', () => {
    expect(Number(params.webhookMaxAttempts)).toBe(schedule.length + 1);
    expect(Number(params.webhookMaxReceives)).toBeGreaterThan(Number(params.webhookMaxAttempts));
    expect(queue.RedrivePolicy.maxReceiveCount).toBe(variable('param:webhookMaxReceives'));
    expect(fn.environment.WEBHOOK_MAX_RECEIVES).toBe(variable('param:webhookMaxReceives'));
    expect(queue.RedrivePolicy.deadLetterTargetArn).toEqual({
      'Fn::GetAtt': 'DocumentReceivedDeadLetterQueue.Arn',
    });
  });

  it('consumes both lanes with partial batch failures, at most webhookConcurrency batches of each at once', () => {
    expect(fn.handler).toBe('functions/webhook/deliverWebhook.handler');
    expect(fn.events).toEqual(
      ['DocumentReceivedQueue', 'DocumentReceivedSlowQueue'].map((queue) => ({
        sqs: {
          arn: { 'Fn::GetAtt': `${queue}.Arn` },
          batchSize: 10,
          maximumConcurrency: variable('param:webhookConcurrency'),
          functionResponseType: 'ReportBatchItemFailures',
        },
      })),
    );
    // The slow lane is a queue like the fast one: the same crash recovery, retention and dead-letter queue.
    const slow = resources.DocumentReceivedSlowQueue.Properties;
    expect(slow.VisibilityTimeout).toBe(queue.VisibilityTimeout);
    expect(slow.MessageRetentionPeriod).toBe(queue.MessageRetentionPeriod);
    expect(slow.RedrivePolicy).toEqual(queue.RedrivePolicy);
    expect(fn.environment.DOCUMENT_RECEIVED_SLOW_QUEUE_URL).toEqual({
      'Fn::Ref': 'DocumentReceivedSlowQueue',
    });
  });

  it('has timings that fit: 10 s attempts, crash recovery, 12 h visibility, retention for every attempt', () => {
    expect(fn.timeout).toBeGreaterThan(10);
    // AWS: the queue's visibility at least 6 × the function timeout; SQS: at most 12 h.
    expect(queue.VisibilityTimeout).toBeGreaterThanOrEqual(6 * fn.timeout);
    expect(queue.VisibilityTimeout).toBeLessThanOrEqual(MAX_RETRY_DELAY_SECONDS);
    // Every delay, stretched by the jitter, fits in one message visibility.
    expect(Math.max(...schedule) * (1 + RETRY_JITTER)).toBeLessThanOrEqual(MAX_RETRY_DELAY_SECONDS - 60);
    // Even if Retry-After stretches every delay to 12 h, the message outlives its attempts.
    expect(queue.MessageRetentionPeriod).toBeGreaterThanOrEqual(schedule.length * MAX_RETRY_DELAY_SECONDS);
    expect(resources.DocumentReceivedDeadLetterQueue.Properties.MessageRetentionPeriod).toBe(1209600);
  });

  it('gives the function only the tenant registry, its own two queues and sending to the slow one and its dead-letter queue', () => {
    expect(fn.role).toBe('WebhookDeliveryRole');
    const all = resources.WebhookDeliveryRole.Properties.Policies.flatMap(
      (policy: { PolicyDocument: { Statement: unknown[] } }) => policy.PolicyDocument.Statement,
    ) as unknown[];
    // The registry grants are shared by every role (function-access.yml; their resolved form is
    // checked on the packaged template by tests/package/deploy-parameters.test.ts).
    expect(all).toContain('${file(infra/resources/function-access.yml):readTenantRegistry}');
    expect(all).toContain('${file(infra/resources/function-access.yml):decryptTenantRegistry}');
    const statements = all.filter((s) => typeof s === 'object') as {
      Effect: string;
      Action: string | string[];
      Resource: unknown;
    }[];
    const actions = statements.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action])).sort();
    expect(actions).toEqual([
      'logs:CreateLogStream',
      'logs:PutLogEvents',
      'sqs:ChangeMessageVisibility',
      'sqs:DeleteMessage',
      'sqs:GetQueueAttributes',
      'sqs:ReceiveMessage',
      'sqs:SendMessage',
    ]);
    const sqsStatements = statements.filter((s) => JSON.stringify(s.Action).includes('sqs:'));
    expect(sqsStatements.map((s) => [s.Action, s.Resource])).toEqual([
      [
        ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes', 'sqs:ChangeMessageVisibility'],
        [{ 'Fn::GetAtt': 'DocumentReceivedQueue.Arn' }, { 'Fn::GetAtt': 'DocumentReceivedSlowQueue.Arn' }],
      ],
      [
        'sqs:SendMessage',
        [
          { 'Fn::GetAtt': 'DocumentReceivedSlowQueue.Arn' },
          { 'Fn::GetAtt': 'DocumentReceivedDeadLetterQueue.Arn' },
        ],
      ],
    ]);
    for (const statement of statements) expect(statement.Resource).not.toBe('*');
  });
});

describe('Local queue: document-received', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('lets a message come back WEBHOOK_MAX_RECEIVES times, by default as often as in serverless.yml', () => {
    const local = localQueues.find((q) => q.name === DOCUMENT_RECEIVED_QUEUE)!;
    expect(local.consumer.handler).toBe(fn.handler);
    expect(local.dlqUrlEnv).toBe('DOCUMENT_RECEIVED_DEAD_LETTER_QUEUE_URL');
    vi.stubEnv('WEBHOOK_MAX_RECEIVES', '');
    vi.stubEnv('WEBHOOK_RETRY_SCHEDULE', '1,2,4');
    expect(local.maxReceiveCount).toBe(Number(params.webhookMaxReceives));
    vi.stubEnv('WEBHOOK_RETRY_SCHEDULE', '');
    expect(local.maxReceiveCount).toBe(Number(params.webhookMaxReceives));
    vi.stubEnv('WEBHOOK_RETRY_SCHEDULE', '1,2,4');
    vi.stubEnv('WEBHOOK_MAX_RECEIVES', '7');
    expect(local.maxReceiveCount).toBe(7);
    // Fewer receives than attempts would end events before their schedule: refused.
    vi.stubEnv('WEBHOOK_RETRY_SCHEDULE', '1,1,1,1,1,1,1,1');
    expect(() => local.maxReceiveCount).toThrow(/WEBHOOK_MAX_RECEIVES must be at least .* \(9\), got 7/);
  });
});
