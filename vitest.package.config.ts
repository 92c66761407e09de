import { defineConfig } from 'vitest/config';

/**
 * `npm run test:package`: the packaged service. Each file runs `npm run package` (offline, one at a
 * time under a lock) and checks what it built: the zips (sizes, what they carry, each one's first
 * request in a fresh process), the CloudFormation templates against the resource schemas, the deploy
 * parameters and an `osls deploy` against a CloudFormation stand-in. Its own run, so that `npm test`
 * stays within ten minutes on 2 cores; `.ci/run` runs both.
 */
export default defineConfig({
  test: {
    include: ['tests/package/**/*.test.ts'],
    globalSetup: ['tests/global-setup.ts'],
    setupFiles: ['tests/support/captured-log.ts'],
    execArgv: ['--disable-warning=ExperimentalWarning'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    env: { LOG_LEVEL: 'WARN' },
    maxWorkers: 2,
    reporters: ['default', 'json'],
    // Read by .ci/run for its closing summary.
    outputFile: { json: '.data/test-report-package.json' },
  },
});
