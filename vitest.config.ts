import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    // The differential test needs the T-SQL engine: npm run test:tsql (vitest.tsql.config.ts).
    exclude: ['tests/tsql/**', '**/node_modules/**'],
    globalSetup: ['tests/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each integration/e2e file opens its own copy of the embedded demo database (~1 GB).
    maxWorkers: 2,
    reporters: ['default', 'json'],
    // Read by .ci/run to print a plain `passed, failed` summary line.
    outputFile: { json: '.data/test-report.json' },
  },
});
