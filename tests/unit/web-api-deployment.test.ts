import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { localQueues } from '../../infra/local/queues.js';
import { cloudFormationTags as cfnTags } from '../../infra/local/serverless-config.js';

const read = (path: string) => readFileSync(path, 'utf8');
const service = parse(read('serverless.yml'), { customTags: cfnTags as never });
const params = service.params.default as Record<string, string | number>;
/** The file with `${param:…}` resolved, as the framework does. */
const resolved = (path: string) =>
  parse(
    read(path).replace(/\$\{param:(\w+)\}/g, (_all, name: string) => String(params[name])),
    { customTags: cfnTags as never },
  );
const functions = resolved('serverless.yml').functions;
const resources = resolved('infra/resources/web-api.yml').Resources;

describe('Web API deployment (serverless.yml, infra/resources/web-api.yml)', () => {
  const worker = functions.webJobWorker;
  const queue = resources.WebApiJobQueue.Properties;

  it('feeds the worker from the job queue with partial batch failures', () => {
    expect(worker.handler).toBe('functions/web-api/jobWorker.handler');
    expect(worker.events).toEqual([
      {
        sqs: {
          arn: { 'Fn::GetAtt': 'WebApiJobQueue.Arn' },
          batchSize: expect.any(Number),
          maximumConcurrency: params.jobWorkerConcurrency,
          functionResponseType: 'ReportBatchItemFailures',
        },
      },
    ]);
  });

  it('gives the job queue a dead-letter queue, and a visibility of at least 6 × the worker time-out', () => {
    expect(queue.RedrivePolicy.deadLetterTargetArn).toEqual({ 'Fn::GetAtt': 'WebApiJobDeadLetterQueue.Arn' });
    expect(queue.VisibilityTimeout).toBeGreaterThanOrEqual(6 * worker.timeout);
  });

  it('tells the worker the attempts, the receives and its lease, and 997 a stale time beyond every receive', () => {
    expect(Number(worker.environment.WEB_API_JOB_MAX_RECEIVES)).toBe(queue.RedrivePolicy.maxReceiveCount);
    // Room for receives that never reach the worker (a throttled consumer).
    expect(queue.RedrivePolicy.maxReceiveCount).toBeGreaterThan(
      Number(worker.environment.WEB_API_JOB_MAX_ATTEMPTS),
    );
    expect(worker.environment.WEB_API_JOB_DEAD_LETTER_QUEUE_URL).toEqual({
      'Fn::Ref': 'WebApiJobDeadLetterQueue',
    });
    expect(Number(worker.environment.WEB_API_JOB_LEASE_SECONDS)).toBe(worker.timeout);
    for (const name of ['webGetData', 'webGetDataAsync', 'webJobWorker']) {
      const stale = Number(functions[name].environment.WEB_API_JOB_STALE_SECONDS);
      expect(stale, name).toBeGreaterThan(queue.RedrivePolicy.maxReceiveCount * queue.VisibilityTimeout);
    }
    expect(functions.webGetDataAsync.environment.WEB_API_JOB_QUEUE_URL).toEqual({
      'Fn::Ref': 'WebApiJobQueue',
    });
  });

  it('limits the queue permissions of each role to the job queue', () => {
    const statements = (role: string) => resources[role].Properties.Policies[0].PolicyDocument.Statement;
    const sqs = (role: string) =>
      statements(role).filter((s: { Action: string | string[] }) => String(s.Action).includes('sqs:'));
    expect(sqs('WebApiAsyncRole')).toEqual([
      { Effect: 'Allow', Action: 'sqs:SendMessage', Resource: { 'Fn::GetAtt': 'WebApiJobQueue.Arn' } },
    ]);
    expect(sqs('WebApiWorkerRole')).toEqual([
      {
        Effect: 'Allow',
        Action: ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'],
        Resource: { 'Fn::GetAtt': 'WebApiJobQueue.Arn' },
      },
      // The jobs it gives up, moved by itself; nothing else.
      {
        Effect: 'Allow',
        Action: 'sqs:SendMessage',
        Resource: { 'Fn::GetAtt': 'WebApiJobDeadLetterQueue.Arn' },
      },
    ]);
    expect(sqs('WebApiRole')).toEqual([]);
    expect(functions.webGetDataAsync.role).toBe('WebApiAsyncRole');
    expect(functions.webJobWorker.role).toBe('WebApiWorkerRole');
  });

  it('runs the same worker on the local stack, with the same redrive and a visibility of 6 × its lease', () => {
    const local = localQueues.find((q) => q.consumer.function === 'webJobWorker')!;
    expect(local.urlEnv).toBe('WEB_API_JOB_QUEUE_URL');
    expect(local.consumer.handler).toBe(worker.handler);
    expect(local.maxReceiveCount).toBe(queue.RedrivePolicy.maxReceiveCount);
    expect(local.visibilityTimeoutSeconds).toBe(queue.VisibilityTimeout);
    expect(local.dlqUrlEnv).toBe('WEB_API_JOB_DEAD_LETTER_QUEUE_URL');
  });

  it('tells each local SQS consumer the time-out serverless.yml gives its function (issue 19: the poller said 60 s)', () => {
    for (const queue of localQueues) {
      expect([queue.consumer.function, queue.consumer.timeoutSeconds]).toEqual([
        queue.consumer.function,
        Number(functions[queue.consumer.function].timeout),
      ]);
    }
  });
});
