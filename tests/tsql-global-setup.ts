import type { TestProject } from 'vitest/node';
import { prepareTsqlDemo, startTsqlDemo, tsqlAvailable, tsqlEngineDir } from '../infra/local/tsql-engine.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Connection string of the T-SQL demo database the integration suites run on ('' = use MSSQL_URL). */
    tsqlUrl: string;
  }
}

/**
 * npm run test:tsql: the T-SQL database every suite of the run needs. With MSSQL_URL, that server;
 * else the engine of TSQL_ENGINE_DIR: the demo is prepared once (and reused by later runs), and one
 * engine copy serves the integration suites (each e2e stack starts a copy of its own).
 */
/** Prepares the demo once (first run ~10-30 s, later runs reuse it), for every project of test:tsql. */
export async function prepareTsql(): Promise<void> {
  if (process.env.MSSQL_URL) {
    console.log('test:tsql on the SQL Server of MSSQL_URL');
    return;
  }
  if (!tsqlAvailable()) {
    throw new Error(
      `npm run test:tsql needs MSSQL_URL or the T-SQL engine in ${tsqlEngineDir()} (TSQL_ENGINE_DIR)`,
    );
  }
  const prepared = await prepareTsqlDemo();
  console.log(
    prepared.builtInMs
      ? `T-SQL demo database prepared in ${prepared.builtInMs} ms (${prepared.dataDir})`
      : `T-SQL demo database reused (${prepared.dataDir})`,
  );
}

export default async function setup(project: TestProject) {
  await prepareTsql();
  if (process.env.MSSQL_URL) {
    project.provide('tsqlUrl', '');
    return;
  }
  const started = Date.now();
  const demo = await startTsqlDemo();
  console.log(
    `T-SQL engine copy for the integration suites started in ${Date.now() - started} ms (port ${demo.port})`,
  );
  project.provide('tsqlUrl', demo.url);
  return () => demo.stop();
}
