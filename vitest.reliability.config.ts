import { defineConfig } from 'vitest/config';

/** `npm run test:reliability`: bad input, sustained load and faults against the local stack. */
export default defineConfig({
  test: {
    reporters: ['default', 'json'],
    // Read by .ci/run for its closing summary.
    outputFile: { json: '.data/test-report-reliability.json' },
    include: ['tests/reliability/**/*.test.ts'],
    globalSetup: ['tests/global-setup.ts'],
    testTimeout: 180_000,
    hookTimeout: 120_000,
    // One file at a time: the load figures mean something only on an otherwise idle stack.
    fileParallelism: false,
    // Memory figures after a full collection.
    execArgv: ['--expose-gc', '--disable-warning=ExperimentalWarning'],
  },
});
