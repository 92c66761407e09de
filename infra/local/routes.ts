import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';

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

/** Every HTTP route of the service. A test keeps this and serverless.yml in step. */
export const lambdaRoutes: readonly LambdaRoute[] = [
  {
    function: 'dataGetData',
    method: 'GET',
    path: '/{tenant}/JsonAPI/Data/getData/{dataSource}',
    handler: 'functions/data-api/getData.handler',
  },
  {
    function: 'dataGetDataWithCondition',
    method: 'GET',
    path: '/{tenant}/JsonAPI/Data/getDataWithCondition/{dataSource}',
    handler: 'functions/data-api/getDataWithCondition.handler',
  },
  {
    function: 'dataGetRowsCount',
    method: 'GET',
    path: '/{tenant}/JsonAPI/Data/getRowsCount/{dataSource}',
    handler: 'functions/data-api/getRowsCount.handler',
  },
  {
    function: 'dataGetDataPaginate',
    method: 'GET',
    path: '/{tenant}/JsonAPI/Data/getDataPaginate/{dataSource}',
    handler: 'functions/data-api/getDataPaginate.handler',
  },
  {
    function: 'fileGetFile',
    method: 'GET',
    path: '/{tenant}/JsonAPI/File/getFile/{fileGUID}',
    handler: 'functions/files/getFile.handler',
  },
  {
    function: 'fileSetFile',
    method: 'POST',
    path: '/{tenant}/JsonAPI/File/setFile',
    handler: 'functions/files/setFile.handler',
  },
  {
    function: 'webTest',
    method: 'GET',
    path: '/{tenant}/WebAPI/test',
    handler: 'functions/web-api/test.handler',
  },
  {
    function: 'webGetData',
    method: 'POST',
    path: '/{tenant}/WebAPI/getData',
    handler: 'functions/web-api/getData.handler',
  },
  {
    function: 'webGetDataAsync',
    method: 'POST',
    path: '/{tenant}/WebAPI/getDataAsync',
    handler: 'functions/web-api/getDataAsync.handler',
  },
];

/** Imports the export named by a serverless.yml `handler` (`functions/x/y.handler`). */
export async function importHandler<T>(handler: string): Promise<T> {
  const [file, exportName] = handler.split('.') as [string, string];
  const url = pathToFileURL(join(ROOT, `${file}.ts`)).href;
  const module = (await import(/* @vite-ignore */ url)) as Record<string, T>;
  const exported = module[exportName];
  if (typeof exported !== 'function') throw new Error(`${handler} does not export a handler`);
  return exported;
}

/** Loads a route's Lambda handler module (lazily, so the environment is set first). */
export function loadHandler(route: LambdaRoute): Promise<HttpLambda> {
  return importHandler<HttpLambda>(route.handler);
}
