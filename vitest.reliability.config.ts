import { defineConfig } from 'vitest/config';

/** `npm run test:reliability`: bad input, sustained load and faults against the local stack. */
export default defineConfig({
  test: {
    include: ['tests/reliability/**/*.test.ts'],
    globalSetup: ['tests/global-setup.ts'],
    testTimeout: 180_000,
    hookTimeout: 120_000,
    // One file at a time: the load figures mean something only on an otherwise idle stack.
    fileParallelism: false,
    // Memory figures after a full collection.
    execArgv: ['--expose-gc'],
  },
});
