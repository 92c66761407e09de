import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

export interface ServerlessFunction {
  handler: string;
  environment?: Record<string, unknown>;
  events?: { httpApi?: { method: string; path: string }; sqs?: Record<string, unknown> }[];
}

export interface ServerlessConfig {
  params: { default: Record<string, string> };
  functions: Record<string, ServerlessFunction>;
  package: { individually: boolean };
  provider: { runtime: string; httpApi: { payload: string }; environment?: Record<string, unknown> };
  custom: { esbuild: Record<string, unknown> };
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

/** serverless.yml of `serviceDir`, parsed (CloudFormation tags kept as `Fn::` objects). */
export function serverlessConfig(serviceDir = process.cwd()): ServerlessConfig {
  return parse(readFileSync(join(serviceDir, 'serverless.yml'), 'utf8'), {
    customTags: cfnTags as never,
  }) as ServerlessConfig;
}

/** Replaces `${param:x}` with the default of parameter x. */
export function resolveParams(config: ServerlessConfig, text: string): string {
  return text.replace(
    /\$\{param:(\w+)\}/g,
    (_all, name: string) => config.params.default[name] ?? `<${name}>`,
  );
}

/** Every HTTP API route of serverless.yml, prefixes resolved to their defaults. */
export function serverlessHttpRoutes(
  config = serverlessConfig(),
): { function: string; method: string; path: string; handler: string }[] {
  return Object.entries(config.functions).flatMap(([name, fn]) =>
    (fn.events ?? [])
      .filter((event) => event.httpApi)
      .map((event) => ({
        function: name,
        method: event.httpApi!.method.toUpperCase(),
        path: resolveParams(config, event.httpApi!.path),
        handler: fn.handler,
      })),
  );
}
