import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Every suite of the project, one project each (docs/development.md, "Which suite proves what").
 * The shared settings are here; a project says only what differs. Each npm script runs its
 * project(s) by name and writes its own report for .ci/run (`--outputFile.json`):
 *
 * - `test` (npm test): unit, integration and e2e on the embedded database.
 * - `package` (npm run test:package): the packaged service: zips, templates, deploy parameters.
 * - `browser` (npm run test:browser): the docs page in headless Chromium (may apt-install it).
 * - `tsql-integration`, `tsql-e2e` (npm run test:tsql): everything that needs a T-SQL database;
 *   the e2e suite again, with the packaged zips and the least-privileged login (test:least-privilege
 *   runs `tsql-e2e` alone).
 * - `differential` (npm run test:differential): the condition language's differential test with a
 *   random seed (printed).
 * - `reliability` (npm run test:reliability): bad input, load, faults, conditions.
 * - `deploy` (npm run test:deploy): cfn-lint and a deploy to moto on loopback.
 */
export default defineConfig({
  test: {
    // fauxqs runs on node:sqlite, whose warning would repeat in every worker (npm start disables it too).
    execArgv: ['--disable-warning=ExperimentalWarning'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each integration/e2e file opens its own copy of a demo database (~1 GB embedded): two cores.
    maxWorkers: 2,
    reporters: ['default', 'json'],
    // Read by .ci/run to print a plain `passed, failed` summary line; each script names its own.
    outputFile: { json: '.data/test-report.json' },
    projects: [
      {
        extends: true,
        test: {
          name: 'test',
          include: ['tests/**/*.test.ts'],
          // Their own projects below.
          exclude: [
            ...configDefaults.exclude,
            'tests/browser/**',
            'tests/reliability/**',
            'tests/tsql/**',
            'tests/deploy/**',
            'tests/package/**',
          ],
          globalSetup: ['tests/global-setup.ts'],
          // In the e2e suites: every answer checked against docs/openapi.yaml. Everywhere: expected
          // failure logs are kept, and shown only for a failing test (tests/support/captured-log.ts).
          setupFiles: ['tests/support/openapi-recording.ts', 'tests/support/captured-log.ts'],
          // Handlers running in-process would print a JSON line per request; tests that read the
          // logs set their own level (or capture them through useObservability).
          env: { LOG_LEVEL: 'WARN' },
        },
      },
      {
        extends: true,
        test: {
          name: 'package',
          include: ['tests/package/**/*.test.ts'],
          globalSetup: ['tests/global-setup.ts'],
          setupFiles: ['tests/support/captured-log.ts'],
          env: { LOG_LEVEL: 'WARN' },
        },
      },
      {
        extends: true,
        test: {
          name: 'browser',
          include: ['tests/browser/**/*.test.ts'],
          globalSetup: ['tests/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 900_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'tsql-integration',
          include: ['tests/integration/mssql*.test.ts', 'tests/integration/web-api-mssql.test.ts'],
          env: { LOCAL_DATABASE: 'tsql' },
          testTimeout: 60_000,
          hookTimeout: 180_000,
          globalSetup: ['tests/tsql-global-setup.ts'],
          // They share one demo database and each runs the (idempotent, but not concurrent-safe) scripts.
          fileParallelism: false,
          setupFiles: ['tests/support/captured-log.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'tsql-e2e',
          include: ['tests/e2e/**/*.test.ts', 'tests/tsql/**/*.test.ts'],
          // One run proves T-SQL, the packaged zips and the least-privileged login together
          // (docs/development.md: each was a run of the same suite of its own).
          env: { LOCAL_DATABASE: 'tsql', LOCAL_FUNCTIONS: 'packaged', LOCAL_DATABASE_LOGIN: 'service-role' },
          testTimeout: 60_000,
          hookTimeout: 180_000,
          globalSetup: ['tests/global-setup.ts', 'tests/tsql-prepare.ts', 'tests/packaged-setup.ts'],
          setupFiles: ['tests/support/openapi-recording.ts', 'tests/support/captured-log.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'differential',
          include: ['tests/tsql/*-differential.test.ts'],
          env: { CONDITION_DIFF_SEED: process.env.CONDITION_DIFF_SEED ?? 'random' },
          testTimeout: 600_000,
          hookTimeout: 120_000,
          globalSetup: ['tests/global-setup.ts', 'tests/tsql-prepare.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'reliability',
          include: ['tests/reliability/**/*.test.ts'],
          // Fair share runs the packaged zips on the T-SQL engine, as Lambda runs them.
          globalSetup: ['tests/global-setup.ts', 'tests/packaged-setup.ts'],
          testTimeout: 180_000,
          hookTimeout: 120_000,
          // One file at a time: the load figures mean something only on an otherwise idle stack.
          fileParallelism: false,
          // Memory figures after a full collection.
          execArgv: ['--expose-gc', '--disable-warning=ExperimentalWarning'],
        },
      },
      {
        extends: true,
        test: {
          name: 'deploy',
          include: ['tests/deploy/**/*.test.ts'],
          testTimeout: 600_000,
          hookTimeout: 900_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
