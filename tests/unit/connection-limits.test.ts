import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import {
  functionPoolSettings,
  LocalFunctionInstances,
  localFunctionInstances,
} from '../../infra/local/function-instances.js';
import { localQueues } from '../../infra/local/queues.js';
import { readServerlessConfig, resolveParams } from '../../infra/local/serverless-config.js';
import { currentFunctionInstance } from '../../shared/config/function-instance.js';

const config = readServerlessConfig();
const { parameterProblems } = createRequire(import.meta.url)('../../infra/deploy/parameter-checks.cjs') as {
  parameterProblems(values: Record<string, unknown>, options: { deploying: boolean }): string[];
};

/** A deploy parameter as serverless.yml refers to it. */
const param = (name: string) => `\${param:${name}}`;

/** The value a function's environment gives `name`: its own, else the provider's, params resolved. */
const variable = (fn: string, name: string) => {
  const value = config.functions[fn]?.environment?.[name] ?? config.provider.environment?.[name];
  return value === undefined ? undefined : resolveParams(config, String(value));
};

describe('serverless.yml: connections per instance and instances per function', () => {
  const http = Object.entries(config.functions).filter(([, fn]) => fn.events?.some((event) => event.httpApi));
  const workers = Object.entries(config.functions).filter(([, fn]) => fn.events?.some((event) => event.sqs));

  it('gives every HTTP function the reserved concurrency of requestFunctionConcurrency', () => {
    expect(http.map(([name]) => name).sort()).toHaveLength(13);
    for (const [name, fn] of http) {
      expect((fn as { reservedConcurrency?: unknown }).reservedConcurrency, name).toBe(
        param('requestFunctionConcurrency'),
      );
    }
  });

  it('gives each queue worker a connection per record of its batch, and caps its batches at once', () => {
    const caps: Record<string, unknown[]> = {};
    for (const [name, fn] of workers) {
      for (const event of fn.events!.filter((e) => e.sqs)) {
        const sqs = event.sqs as { batchSize: number; maximumConcurrency: unknown };
        // The records of a batch run side by side (Promise.all in both handlers).
        expect(Number(variable(name, 'DB_POOL_MAX')), name).toBe(sqs.batchSize);
        caps[name] = [...(caps[name] ?? []), sqs.maximumConcurrency];
      }
      expect((fn as { reservedConcurrency?: unknown }).reservedConcurrency, name).toBeUndefined();
      // The local stack polls in batches of the same size.
      for (const queue of localQueues.filter((q) => q.consumer.function === name)) {
        expect(queue.consumer.batchSize, `${name} ${queue.name}`).toBe(Number(variable(name, 'DB_POOL_MAX')));
      }
    }
    expect(caps).toEqual({
      // The fast and the slow lane.
      deliverWebhook: [param('webhookConcurrency'), param('webhookConcurrency')],
      // The fast and the slow lane, and the passes.
      changeNotifier: [param('webhookConcurrency'), param('webhookConcurrency'), 2],
      webJobWorker: [param('jobWorkerConcurrency')],
    });
  });

  it('sets the pool of every function: one connection, two for getData, an acquire time-out below 30 s', () => {
    const pools = Object.fromEntries(
      Object.keys(config.functions).map((name) => [name, Number(variable(name, 'DB_POOL_MAX'))]),
    );
    expect(pools).toEqual({
      dataGetData: 1,
      dataGetDataWithCondition: 1,
      dataGetRowsCount: 1,
      dataGetDataPaginate: 1,
      dataGetChanges: 1,
      changeFeedRetention: 1,
      dataOpenApi: 1,
      fileGetFile: 1,
      fileSetFile: 1,
      deliverWebhook: 10,
      webhookAdmin: 1,
      dataSubscriptions: 1,
      authorizationServer: 1,
      changeNotifier: 10,
      webTest: 1,
      webGetData: 2,
      webGetDataAsync: 1,
      webJobWorker: 5,
    });
    expect(Number(variable('dataGetData', 'DB_POOL_ACQUIRE_TIMEOUT_MS'))).toBeLessThan(29_000);
  });

  it('runs the webhook admin function (no HTTP route, no queue) in one instance at once', () => {
    expect((config.functions.webhookAdmin as { reservedConcurrency?: unknown }).reservedConcurrency).toBe(1);
  });

  it('defaults to 64 per HTTP function, 5 batches of each worker lane, 2 of passes, one admin and one retention clean-up: the formula gives 1,079', () => {
    const given = (name: string) => Number(config.params.default[name]);
    const sessions =
      http
        // The authorization server opens no database (its clients and keys are the registry's).
        .filter(([name]) => name !== 'authorizationServer')
        .reduce(
          (sum, [name]) => sum + given('requestFunctionConcurrency') * Number(variable(name, 'DB_POOL_MAX')),
          0,
        ) +
      given('jobWorkerConcurrency') * Number(variable('webJobWorker', 'DB_POOL_MAX')) +
      2 * given('webhookConcurrency') * Number(variable('deliverWebhook', 'DB_POOL_MAX')) +
      (2 * given('webhookConcurrency') + 2) * Number(variable('changeNotifier', 'DB_POOL_MAX')) +
      Number((config.functions.webhookAdmin as { reservedConcurrency?: unknown }).reservedConcurrency) *
        Number(variable('webhookAdmin', 'DB_POOL_MAX')) +
      Number(
        (config.functions.changeFeedRetention as { reservedConcurrency?: unknown }).reservedConcurrency,
      ) *
        Number(variable('changeFeedRetention', 'DB_POOL_MAX'));
    // docs/sql-server.md "Connections to SQL Server" gives this figure.
    expect(sessions).toBe(1079);
  });
});

describe('deploy parameter checks of the concurrency settings', () => {
  const problems = (values: Record<string, string>) => parameterProblems(values, { deploying: false });

  it('takes whole numbers in range', () => {
    expect(
      problems({ requestFunctionConcurrency: '1', jobWorkerConcurrency: '2', webhookConcurrency: '1000' }),
    ).toEqual([]);
  });

  it('refuses 0 reserved (every request refused), maximumConcurrency outside 2–1000, and non-numbers', () => {
    expect(problems({ requestFunctionConcurrency: '0' })).toEqual([
      'requestFunctionConcurrency must be a whole number of instances, 1–1000; got "0"',
    ]);
    expect(problems({ requestFunctionConcurrency: '1001' })).toHaveLength(1);
    expect(problems({ jobWorkerConcurrency: '1' })).toEqual([
      'jobWorkerConcurrency must be a whole number of batches at once, 2–1000; got "1"',
    ]);
    expect(problems({ webhookConcurrency: '1200' })).toHaveLength(1);
    expect(problems({ webhookConcurrency: 'ten' })).toHaveLength(1);
  });
});

describe('the local stack as Lambda instances', () => {
  it("sizes each function's pools as serverless.yml does, unless its own environment says otherwise", () => {
    expect(functionPoolSettings('dataGetData', config, {})).toEqual({
      maxConnections: 1,
      acquireTimeoutMs: 5000,
      idleTimeoutMs: 60_000,
    });
    expect(functionPoolSettings('webGetData', config, {}).maxConnections).toBe(2);
    expect(functionPoolSettings('webJobWorker', config, {}).maxConnections).toBe(5);
    expect(functionPoolSettings('deliverWebhook', config, {}).maxConnections).toBe(10);
    expect(functionPoolSettings('dataGetData', config, { DB_POOL_MAX: '4' }).maxConnections).toBe(4);
    expect(localFunctionInstances(config).of('webGetData').settings.maxConnections).toBe(2);
  });

  it('runs an invocation in an idle instance, or in a new one while every other is busy', async () => {
    const instances = new LocalFunctionInstances('fn', {
      maxConnections: 1,
      acquireTimeoutMs: 100,
      idleTimeoutMs: 1000,
    });
    const release: (() => void)[] = [];
    const busy = () =>
      instances.invoke(async () => {
        await new Promise<void>((resolve) => release.push(resolve));
        return currentFunctionInstance().id;
      });
    const running = [busy(), busy(), busy()];
    await new Promise((resolve) => setTimeout(resolve, 5));
    for (const done of release.splice(0)) done();
    expect((await Promise.all(running)).sort()).toEqual(['fn#1', 'fn#2', 'fn#3']);
    // One after the other, the same warm instance.
    const one = await instances.invoke(async () => currentFunctionInstance().id);
    const two = await instances.invoke(async () => currentFunctionInstance().id);
    expect(one).toBe(two);
    expect(instances.count).toBe(3);
  });
});
