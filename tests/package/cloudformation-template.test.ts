import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type CallParameters,
  checkTemplateWith,
  loadResourceSpec,
  type ResourceSpec,
} from '../support/cloudformation-check.js';
import { packageService, withPackagingLock } from '../support/packaged-service.js';

// The templates `npm run package` writes, checked against CloudFormation's resource schemas: the
// whole stack (update-stack) and what the first deploy of a stage creates before it (create-stack).
// The checker's own tests (tests/unit/cloudformation-check.test.ts) show what it catches.

/** What an operator gives at deploy time (docs/operations.md "Deploy, step by step"). */
const DEPLOY_PARAMETERS = {
  vpcSubnetIds: 'subnet-0a1b2c3d,subnet-0b2c3d4e',
  vpcSecurityGroupIds: 'sg-0c3d4e5f',
  alarmTopicArn: 'arn:aws:sns:eu-central-1:123456789012:erp-gateway-ops',
};

let spec: ResourceSpec;
let templates: Record<'update' | 'create', unknown>;
/** provider.stackParameters, resolved: what `osls deploy` passes with both its stack calls. */
let stackParameters: CallParameters;

beforeAll(async () => {
  [spec, templates] = await Promise.all([
    loadResourceSpec(),
    // Read inside the lock: another test's packaging rewrites .serverless/.
    withPackagingLock(() => {
      // With the VPC a deploy requires (infra/deploy/parameter-checks.cjs): its ids become the
      // defaults of typed parameters, which an empty value would not fit.
      packageService(process.cwd(), DEPLOY_PARAMETERS);
      const read = (kind: string) =>
        JSON.parse(readFileSync(join('.serverless', `cloudformation-template-${kind}-stack.json`), 'utf8'));
      const state = JSON.parse(readFileSync(join('.serverless', 'serverless-state.json'), 'utf8'));
      stackParameters = state.service.provider.stackParameters ?? [];
      return { update: read('update'), create: read('create') };
    }),
  ]);
}, 600_000);

describe('the packaged CloudFormation templates', () => {
  it('has no problem in the update-stack template (the whole stack)', () => {
    expect(checkTemplateWith(spec, templates.update)).toEqual([]);
  });

  it('has no problem in the create-stack template (the first deploy)', () => {
    expect(checkTemplateWith(spec, templates.create)).toEqual([]);
  });

  // osls passes provider.stackParameters with the CreateStack of the first deploy too, whose
  // template has only the deployment bucket (lib/plugins/aws/lib/get-shared-stack-action-params.js):
  // the service passes none, and every parameter it declares has its value as the default.
  it('declares every parameter the deploy passes, in both templates', () => {
    expect(stackParameters).toEqual([]);
    expect(checkTemplateWith(spec, templates.update, { parameters: stackParameters })).toEqual([]);
    expect(checkTemplateWith(spec, templates.create, { parameters: stackParameters })).toEqual([]);
  });
});
