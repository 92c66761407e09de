import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { readServerlessConfig } from '../../infra/local/serverless-config.js';

const require = createRequire(import.meta.url);
const { parameterProblems } = require('../../infra/deploy/parameter-checks.cjs') as {
  parameterProblems: (values: Record<string, unknown>, options: { deploying: boolean }) => string[];
};

/** serverless.yml's defaults, as the framework resolves them for stage prod. */
const defaults = {
  ...(readServerlessConfig().params.default as Record<string, unknown>),
  tenantRegistrySecretId: 'erp-gateway/prod/tenant-registry',
};
const problems = (changes: Record<string, unknown>) =>
  parameterProblems({ ...defaults, ...changes }, { deploying: false });

describe('infra/deploy/parameter-checks.cjs: attempts and receives', () => {
  it("accepts serverless.yml's defaults", () => {
    expect(problems({})).toEqual([]);
  });

  it("refuses a queue's maxReceiveCount that leaves no room beyond the attempts", () => {
    expect(problems({ webhookMaxReceives: 9 })).toEqual([
      'webhookMaxReceives must be more than webhookMaxAttempts (9), to leave room for receives that never reach the function; got 9',
    ]);
    expect(problems({ webApiJobMaxAttempts: 4, webApiJobMaxReceives: 3 })).toEqual([
      'webApiJobMaxReceives must be more than webApiJobMaxAttempts (4), to leave room for receives that never reach the function; got 3',
    ]);
    expect(problems({ webhookMaxReceives: 1001 })[0]).toMatch(
      /webhookMaxReceives must be a whole number from 1 to 1000/,
    );
  });

  it('refuses a stale time within the job queue’s receives × visibility', () => {
    expect(problems({ webApiJobStaleSeconds: 5400 })).toEqual([
      'webApiJobStaleSeconds must be longer than webApiJobMaxReceives × webApiJobVisibility (5400), or 997 gives up jobs still waiting on the queue; got 5400',
    ]);
  });
});
