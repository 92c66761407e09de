import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    // Their own runs: npm run test:browser, npm run test:reliability, npm run test:package (the
    // packaged service), npm run test:deploy, and the T-SQL engine's, npm run test:tsql.
    exclude: [
      ...configDefaults.exclude,
      'tests/browser/**',
      'tests/reliability/**',
      'tests/tsql/**',
      'tests/deploy/**',
      'tests/package/**',
    ],
    globalSetup: ['tests/global-setup.ts'],
    // In the e2e suites: every answer checked against docs/openapi.yaml. Everywhere: expected failure
    // logs are kept, and shown only for a failing test (tests/support/captured-log.ts).
    setupFiles: ['tests/support/openapi-recording.ts', 'tests/support/captured-log.ts'],
    // fauxqs runs on node:sqlite, whose warning would repeat in every worker (npm start disables it too).
    execArgv: ['--disable-warning=ExperimentalWarning'],
    testTimeout: 30_000,
    // Handlers running in-process would print a JSON line per request; tests that read the logs
    // set their own level (or capture them through useObservability).
    env: { LOG_LEVEL: 'WARN' },
    hookTimeout: 60_000,
    // Each integration/e2e file opens its own copy of the embedded demo database (~1 GB).
    maxWorkers: 2,
    reporters: ['default', 'json'],
    // Read by .ci/run to print a plain `passed, failed` summary line.
    outputFile: { json: '.data/test-report.json' },
  },
});
