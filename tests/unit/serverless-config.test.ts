import { describe, expect, it } from 'vitest';
import { localQueues } from '../../infra/local/queues.js';
import { lambdaRoutes } from '../../infra/local/routes.js';
import { serverlessConfig, serverlessHttpRoutes } from '../support/serverless.js';

const config = serverlessConfig();

describe('serverless.yml', () => {
  it('deploys Node.js 22, payload 2.0 and one bundle per function', () => {
    expect(config.provider.runtime).toBe('nodejs22.x');
    expect(String(config.provider.httpApi.payload)).toBe('2.0');
    expect(config.package.individually).toBe(true);
  });

  it('has exactly the HTTP routes the local stack serves, with the same handlers', () => {
    const deployed = serverlessHttpRoutes(config);
    const local = lambdaRoutes.map((route) => ({ ...route }));
    const key = (r: { method: string; path: string }) => `${r.method} ${r.path}`;
    expect(deployed.sort((a, b) => key(a).localeCompare(key(b)))).toEqual(
      local.sort((a, b) => key(a).localeCompare(key(b))),
    );
  });

  it('has a function for every local queue consumer', () => {
    for (const queue of localQueues) {
      const fn = config.functions[queue.consumer.function];
      expect(fn?.handler, queue.consumer.function).toBe(queue.consumer.handler);
      expect(fn?.events?.some((event) => event.sqs)).toBe(true);
    }
  });
});
