import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { localQueues } from '../../infra/local/queues.js';
import { lambdaRoutes } from '../../infra/local/routes.js';

interface ServerlessFunction {
  handler: string;
  events?: { httpApi?: { method: string; path: string }; sqs?: Record<string, unknown> }[];
}

// CloudFormation short tags (!Ref, !Sub, …) only need to parse, not resolve.
const cfnTags = ['Ref', 'Sub', 'GetAtt', 'Split', 'Join', 'If', 'Equals', 'Select', 'ImportValue'].flatMap(
  (tag) =>
    (['scalar', 'seq', 'map'] as const).map((collection) => ({
      tag: `!${tag}`,
      collection: collection === 'scalar' ? undefined : collection,
      resolve: (value: unknown) => ({ [`Fn::${tag}`]: value }),
    })),
);

const config = parse(readFileSync('serverless.yml', 'utf8'), { customTags: cfnTags as never }) as {
  params: { default: Record<string, string> };
  functions: Record<string, ServerlessFunction>;
  package: { individually: boolean };
  provider: { runtime: string; httpApi: { payload: string } };
};

const resolveParams = (path: string) =>
  path.replace(/\$\{param:(\w+)\}/g, (_all, name: string) => config.params.default[name] ?? `<${name}>`);

describe('serverless.yml', () => {
  it('deploys Node.js 22, payload 2.0 and one bundle per function', () => {
    expect(config.provider.runtime).toBe('nodejs22.x');
    expect(String(config.provider.httpApi.payload)).toBe('2.0');
    expect(config.package.individually).toBe(true);
  });

  it('has exactly the HTTP routes the local stack serves, with the same handlers', () => {
    const deployed = Object.entries(config.functions).flatMap(([name, fn]) =>
      (fn.events ?? [])
        .filter((event) => event.httpApi)
        .map((event) => ({
          function: name,
          method: event.httpApi!.method.toUpperCase(),
          path: resolveParams(event.httpApi!.path),
          handler: fn.handler,
        })),
    );
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
