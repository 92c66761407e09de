import { defineConfig } from 'vitest/config';

// `npm run test:browser`: the docs page in headless Chromium, kept out of `npm test` (it may
// install chromium with apt first).
export default defineConfig({
  test: {
    reporters: ['default', 'json'],
    // Read by .ci/run for its closing summary.
    outputFile: { json: '.data/test-report-browser.json' },
    include: ['tests/browser/**/*.test.ts'],
    // fauxqs opens node:sqlite, whose ExperimentalWarning would be the run's only warning line.
    execArgv: ['--disable-warning=ExperimentalWarning'],
    globalSetup: ['tests/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 900_000,
  },
});
