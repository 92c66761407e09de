import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface ServerlessFunction {
  readonly handler: string;
  readonly timeout?: number | string;
  readonly reservedConcurrency?: number | string;
  readonly environment?: Record<string, unknown>;
  readonly events?: readonly {
    readonly httpApi?: { readonly method: string; readonly path: string };
    readonly sqs?: Record<string, unknown>;
  }[];
}

export interface ServerlessConfig {
  readonly params: { readonly default: Record<string, string | number> };
  readonly provider: Record<string, unknown> & {
    readonly timeout?: number;
    readonly environment?: Record<string, unknown>;
  };
  readonly functions: Record<string, ServerlessFunction>;
  readonly package: Record<string, unknown>;
  readonly custom?: Record<string, unknown>;
}

// CloudFormation short tags (!Ref, !GetAtt, ...) only need to parse here, not resolve.
export const cloudFormationTags = [
  'Ref',
  'Sub',
  'GetAtt',
  'Split',
  'Join',
  'If',
  'Equals',
  'Select',
  'ImportValue',
  'Not',
  'And',
  'Or',
  'Condition',
].flatMap((tag) =>
  ([undefined, 'seq', 'map'] as const).map((collection) => ({
    tag: `!${tag}`,
    collection,
    resolve: (value: unknown) => ({ [`Fn::${tag}`]: value }),
  })),
);

/** `serverless.yml` of this repository, parsed (CloudFormation tags kept as `{"Fn::X": ...}`). */
export function readServerlessConfig(path = join(ROOT, 'serverless.yml')): ServerlessConfig {
  return parse(readFileSync(path, 'utf8'), { customTags: cloudFormationTags as never }) as ServerlessConfig;
}

/** Replaces `${param:name}` with the param's default, as a deployment without `--param` does. */
export function resolveParams(config: ServerlessConfig, text: string): string {
  return text.replace(/\$\{param:(\w+)\}/g, (all, name: string) => {
    const value = config.params.default[name];
    if (value === undefined) throw new Error(`serverless.yml: ${all} has no default`);
    return String(value);
  });
}
