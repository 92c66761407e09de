import { defineConfig } from 'vitest/config';

/**
 * `npm run test:deploy`: AWS's own tools on the packaged service. cfn-lint on the packaged
 * templates, then a real deploy to a moto server on loopback (first deploy, update, remove, deploy
 * again), checking what moto holds. Needs Python with cfn-lint and moto (README "Verified where").
 */
export default defineConfig({
  test: {
    reporters: ['default', 'json'],
    // Read by .ci/run for its closing summary.
    outputFile: { json: '.data/test-report-deploy.json' },
    include: ['tests/deploy/**/*.test.ts'],
    testTimeout: 600_000,
    hookTimeout: 900_000,
    fileParallelism: false,
  },
});
