import { defineConfig } from 'vitest/config';

/**
 * npm run test:tsql: everything that needs a T-SQL database, on the engine of TSQL_ENGINE_DIR (or the
 * SQL Server of MSSQL_URL): the SQL Server integration suites, the whole e2e suite a second time
 * with the demo tenant on T-SQL (LOCAL_DATABASE=tsql), logging in as a login that holds only the
 * service's role (LOCAL_DATABASE_LOGIN=service-role: the grants `npm run db:apply -- --role` gives),
 * and every handler loaded from its packaged zip as Lambda runs it (LOCAL_FUNCTIONS=packaged: the
 * bundles, their chunks and the AWS SDK they carry), and the differential test of the condition
 * language against the embedded database. One e2e run proves the three (T-SQL, least privilege,
 * the packaged zips): each was a run of its own, the same suite twice on the same database
 * (docs/development.md, "Which suite proves what").
 */
export default defineConfig({
  test: {
    env: { LOCAL_DATABASE: 'tsql' },
    testTimeout: 60_000,
    hookTimeout: 180_000,
    maxWorkers: 2,
    execArgv: ['--disable-warning=ExperimentalWarning'],
    reporters: ['default', 'json'],
    outputFile: { json: '.data/test-report-tsql.json' },
    projects: [
      {
        extends: true,
        test: {
          name: 'tsql-integration',
          include: ['tests/integration/mssql*.test.ts', 'tests/integration/web-api-mssql.test.ts'],
          globalSetup: ['tests/tsql-global-setup.ts'],
          // They share one demo database and each runs the (idempotent, but not concurrent-safe) scripts.
          fileParallelism: false,
          // Expected failure logs kept, shown only for a failing test.
          setupFiles: ['tests/support/captured-log.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'tsql-e2e',
          include: ['tests/e2e/**/*.test.ts', 'tests/tsql/**/*.test.ts'],
          env: { LOCAL_DATABASE: 'tsql', LOCAL_FUNCTIONS: 'packaged', LOCAL_DATABASE_LOGIN: 'service-role' },
          globalSetup: ['tests/global-setup.ts', 'tests/tsql-prepare.ts', 'tests/packaged-setup.ts'],
          setupFiles: ['tests/support/openapi-recording.ts', 'tests/support/captured-log.ts'],
        },
      },
    ],
  },
});
