import { defineConfig } from 'vitest/config';

/**
 * npm run test:differential: the differential tests (the condition language's and the Web API
 * parameters', tests/tsql/*-differential.test.ts) with a random seed, printed at the start, so that
 * every run explores new cases; test:tsql runs the same tests with their fixed seed. Needs the T-SQL engine of TSQL_ENGINE_DIR (or MSSQL_URL).
 */
export default defineConfig({
  test: {
    include: ['tests/tsql/*-differential.test.ts'],
    // fauxqs opens node:sqlite, whose ExperimentalWarning would be the run's only warning line.
    execArgv: ['--disable-warning=ExperimentalWarning'],
    env: { CONDITION_DIFF_SEED: process.env.CONDITION_DIFF_SEED ?? 'random' },
    globalSetup: ['tests/global-setup.ts', 'tests/tsql-prepare.ts'],
    testTimeout: 600_000,
    hookTimeout: 120_000,
    reporters: ['default', 'json'],
    // Read by .ci/run for its closing summary.
    outputFile: { json: '.data/test-report-differential.json' },
  },
});
