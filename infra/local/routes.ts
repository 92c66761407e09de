import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { functionOfHandler, importPackagedModule, localFunctions } from './packaged-functions.js';
import { readServerlessConfig, resolveParams, type ServerlessConfig } from './serverless-config.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export type HttpLambda = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;

/** One HTTP API route of `serverless.yml`, served locally by the same handler. */
export interface LambdaRoute {
  /** Function name in serverless.yml. */
  readonly function: string;
  readonly method: string;
  /** Route path with `{param}` segments, as in serverless.yml (prefixes resolved to their defaults). */
  readonly path: string;
  /** `handler` of the function in serverless.yml. */
  readonly handler: string;
}

/**
 * Every HTTP route of the service, read from `serverless.yml` (each `httpApi` event of each
 * function, prefixes resolved to their defaults), so the local stack serves exactly what deploys.
 */
export function lambdaRoutes(config: ServerlessConfig = readServerlessConfig()): LambdaRoute[] {
  return Object.entries(config.functions).flatMap(([name, fn]) =>
    (fn.events ?? []).flatMap((event) =>
      event.httpApi
        ? [
            {
              function: name,
              method: event.httpApi.method.toUpperCase(),
              path: resolveParams(config, event.httpApi.path),
              handler: fn.handler,
            },
          ]
        : [],
    ),
  );
}

/**
 * Imports the export named by a serverless.yml `handler` (`functions/x/y.handler`): from the
 * TypeScript sources, or with LOCAL_FUNCTIONS=packaged from the function's zip as Lambda runs it.
 */
export async function importHandler<T>(handler: string): Promise<T> {
  const [file, exportName] = handler.split('.') as [string, string];
  const module =
    localFunctions() === 'packaged'
      ? await importPackagedModule(functionOfHandler(handler), handler)
      : ((await import(/* @vite-ignore */ pathToFileURL(join(ROOT, `${file}.ts`)).href)) as Record<
          string,
          unknown
        >);
  const exported = module[exportName] as T;
  if (typeof exported !== 'function') throw new Error(`${handler} does not export a handler`);
  return exported;
}

/** Loads a route's Lambda handler module (lazily, so the environment is set first). */
export function loadHandler(route: LambdaRoute): Promise<HttpLambda> {
  return importHandler<HttpLambda>(route.handler);
}
