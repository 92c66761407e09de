import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { localQueues } from '../../infra/local/queues.js';
import { lambdaRoutes } from '../../infra/local/routes.js';
import { readServerlessConfig, resolveParams } from '../../infra/local/serverless-config.js';

const config = readServerlessConfig() as ReturnType<typeof readServerlessConfig> & {
  package: { individually: boolean };
  provider: { runtime: string; httpApi: { payload: string } };
};

describe('serverless.yml', () => {
  it('deploys Node.js 22, payload 2.0 and one bundle per function', () => {
    expect(config.provider.runtime).toBe('nodejs22.x');
    expect(String(config.provider.httpApi.payload)).toBe('2.0');
    expect(config.package.individually).toBe(true);
  });

  it('gives the local stack one route per httpApi event, prefixes resolved, handlers that exist', () => {
    const events = Object.values(config.functions).flatMap((fn) =>
      (fn.events ?? []).filter((e) => e.httpApi),
    );
    const routes = lambdaRoutes(config);
    expect(routes).toHaveLength(events.length);
    for (const route of routes) {
      expect(route.path).not.toContain('param:');
      // Each under the tenant, but the RFC 8414 location of its authorization server's metadata.
      expect(route.path).toMatch(
        /^(\/\{tenant\}\/(JsonAPI\/|WebAPI\/|oauth2\/token$|\.well-known\/)|\/\.well-known\/oauth-authorization-server\/\{tenant\}$)/,
      );
      expect(existsSync(`${route.handler.split('.')[0]}.ts`), route.handler).toBe(true);
    }
    expect(routes).toContainEqual({
      function: 'authorizationServer',
      method: 'GET',
      path: '/.well-known/oauth-authorization-server/{tenant}',
      handler: 'functions/oauth/authorizationServer.handler',
    });
    expect(routes).toContainEqual({
      function: 'dataGetData',
      method: 'GET',
      path: '/{tenant}/JsonAPI/Data/getData/{dataSource}',
      handler: 'functions/data-api/getData.handler',
    });
  });

  it('refuses a param without a default rather than serving a wrong path', () => {
    const unknownParam = ['/x/$', '{param:noSuchParam}'].join('');
    expect(() => resolveParams(config, unknownParam)).toThrow(/noSuchParam/);
  });

  it('has a function for every local queue consumer', () => {
    for (const queue of localQueues) {
      const fn = config.functions[queue.consumer.function];
      expect(fn?.handler, queue.consumer.function).toBe(queue.consumer.handler);
      expect(fn?.events?.some((event) => event.sqs)).toBe(true);
    }
  });
});
