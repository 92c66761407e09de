import { defineConfig } from 'vitest/config';

/**
 * npm run test:least-privilege: the whole e2e suite on the T-SQL engine with the demo tenant logging
 * in as a login that holds only the service's role (LOCAL_DATABASE_LOGIN=service-role: the grants
 * `npm run db:apply -- --role` gives, docs/sql-server.md "Permissions"), so that the documented
 * grants are proven to suffice. Each grant taken away in turn is tests/tsql/least-privilege.test.ts
 * (in npm run test:tsql).
 */
export default defineConfig({
  test: {
    include: ['tests/e2e/**/*.test.ts'],
    env: { LOCAL_DATABASE: 'tsql', LOCAL_DATABASE_LOGIN: 'service-role' },
    testTimeout: 60_000,
    hookTimeout: 180_000,
    maxWorkers: 2,
    execArgv: ['--disable-warning=ExperimentalWarning'],
    globalSetup: ['tests/global-setup.ts', 'tests/tsql-prepare.ts'],
    setupFiles: ['tests/support/openapi-recording.ts', 'tests/support/captured-log.ts'],
    reporters: ['default', 'json'],
    outputFile: { json: '.data/test-report-least-privilege.json' },
  },
});
