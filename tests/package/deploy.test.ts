import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CloudFormationClient, CreateChangeSetCommand } from '@aws-sdk/client-cloudformation';
import { type FauxqsServer, startFauxqs } from 'fauxqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkTemplate } from '../support/cloudformation-check.js';
import {
  type CloudFormationStandIn,
  type RecordedCall,
  startCloudFormationStandIn,
} from '../support/cloudformation-stand-in.js';
import { withPackagingLock } from '../support/packaged-service.js';

/**
 * `osls deploy` as an operator runs it (docs/operations.md "Deploy, step by step"), against a stand-in of the
 * CloudFormation API on loopback and the S3 emulator for the deployment bucket, with dummy
 * credentials: every AWS endpoint is on 127.0.0.1, nothing leaves the machine. The stand-in
 * refuses what CloudFormation refuses before it creates anything (undeclared or missing
 * parameters, values that do not fit their types, a template that breaks CloudFormation's
 * resource schemas), so a deploy that fails there fails here.
 */

const STACK = 'erp-integration-gateway-dev';
const VPC = [
  '--param=vpcSubnetIds=subnet-0a1b2c3d,subnet-0b2c3d4e',
  '--param=vpcSecurityGroupIds=sg-0c3d4e5f',
];
const TOPIC = 'arn:aws:sns:eu-central-1:123456789012:erp-gateway-ops';

let emulator: FauxqsServer;
let s3Endpoint: string;
const home = mkdtempSync(join(tmpdir(), 'deploy-home-'));

interface DeployRun {
  readonly status: number | null;
  readonly output: string;
  readonly calls: readonly RecordedCall[];
}

/** Runs `osls deploy --stage dev <args>` against `standIn`; answers its exit, output and the calls it made. */
async function deploy(standIn: CloudFormationStandIn, args: string[]): Promise<DeployRun> {
  const before = standIn.calls.length;
  const { status, output } = await withPackagingLock(
    () =>
      new Promise<{ status: number | null; output: string }>((resolve) => {
        const child = spawn('npx', ['osls', 'deploy', '--stage', 'dev', ...args], {
          cwd: process.cwd(),
          env: {
            PATH: process.env.PATH,
            // No ~/.aws of the machine: only the dummy credentials below.
            HOME: home,
            AWS_ACCESS_KEY_ID: 'AKIASTANDIN',
            AWS_SECRET_ACCESS_KEY: 'stand-in',
            AWS_REGION: 'eu-central-1',
            // Every service on the stand-in, S3 on the emulator.
            AWS_ENDPOINT_URL: standIn.endpoint,
            AWS_ENDPOINT_URL_S3: s3Endpoint,
            SLS_AWS_MONITORING_FREQUENCY: '10',
          },
        });
        let output = '';
        child.stdout.on('data', (data: Buffer) => (output += data.toString()));
        child.stderr.on('data', (data: Buffer) => (output += data.toString()));
        child.on('close', (code) => resolve({ status: code, output }));
      }),
  );
  return { status, output, calls: standIn.calls.slice(before) };
}

const stackChanges = (calls: readonly RecordedCall[]) =>
  calls.filter((call) => ['CreateChangeSet', 'CreateStack', 'UpdateStack'].includes(call.action));

beforeAll(async () => {
  emulator = await startFauxqs({ port: 0, host: '127.0.0.1', logger: false });
  s3Endpoint = `http://127.0.0.1:${emulator.port}`;
});

afterAll(async () => {
  await emulator?.stop();
  rmSync(home, { recursive: true, force: true });
});

describe('the stand-in refuses what CloudFormation refuses', () => {
  let standIn: CloudFormationStandIn;
  let client: CloudFormationClient;
  beforeAll(async () => {
    standIn = await startCloudFormationStandIn({ s3Endpoint, checkTemplate });
    client = new CloudFormationClient({
      endpoint: standIn.endpoint,
      region: 'eu-central-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
      maxAttempts: 1,
    });
  });
  afterAll(async () => {
    client.destroy();
    await standIn.stop();
  });

  const bucketOnly = { Resources: { ServerlessDeploymentBucket: { Type: 'AWS::S3::Bucket' } } };
  const createWith = (template: unknown, parameters: Record<string, string> = {}) =>
    client.send(
      new CreateChangeSetCommand({
        StackName: `s${Math.random().toString(36).slice(2)}`,
        ChangeSetName: 'c',
        ChangeSetType: 'CREATE',
        TemplateBody: JSON.stringify(template),
        Parameters: Object.entries(parameters).map(([ParameterKey, ParameterValue]) => ({
          ParameterKey,
          ParameterValue,
        })),
      }),
    );

  it('refuses a parameter the template does not declare (the first deploy of provider.stackParameters)', async () => {
    await expect(createWith(bucketOnly, { VpcSubnetIds: 'subnet-0a1b2c3d' })).rejects.toThrow(
      'Parameters: [VpcSubnetIds] do not exist in the template',
    );
  });

  it('refuses a declared parameter without a value, and an id of the wrong kind', async () => {
    const withSubnets = {
      ...bucketOnly,
      Parameters: { Subnets: { Type: 'List<AWS::EC2::Subnet::Id>' } },
    };
    await expect(createWith(withSubnets)).rejects.toThrow('Parameters: [Subnets] must have values');
    await expect(createWith(withSubnets, { Subnets: 'sg-0a1b2c3d' })).rejects.toThrow(
      /parameter name Subnets/,
    );
    await expect(createWith(withSubnets, { Subnets: 'subnet-0a1b2c3d' })).resolves.toBeDefined();
  });

  it('refuses a template that breaks the resource schemas', async () => {
    await expect(
      createWith({ Resources: { Q: { Type: 'AWS::SQS::Queue', Properties: { NoSuchProperty: 1 } } } }),
    ).rejects.toThrow(/Template format error: .*NoSuchProperty/);
  });
});

describe('osls deploy of a new stage', () => {
  let standIn: CloudFormationStandIn;
  let first: DeployRun;
  beforeAll(async () => {
    standIn = await startCloudFormationStandIn({ s3Endpoint, checkTemplate });
    first = await deploy(standIn, [...VPC, `--param=alarmTopicArn=${TOPIC}`]);
  }, 600_000);
  afterAll(async () => standIn?.stop());

  it('succeeds on the first try: the stack is created, then updated to the whole service', () => {
    expect(first.status, first.output).toBe(0);
    const changes = stackChanges(first.calls);
    expect(changes.map((call) => call.params.ChangeSetType)).toEqual(['CREATE', 'UPDATE']);
    expect(changes.filter((call) => call.refused)).toEqual([]);
    expect(standIn.stack(STACK)?.status).toBe('UPDATE_COMPLETE');
  });

  it('passes no parameter to any stack call: the values are the declared parameters’ defaults', () => {
    for (const call of stackChanges(first.calls)) {
      expect(call.parameters, call.action).toEqual({});
      const declared = Object.keys(call.template?.Parameters ?? {});
      for (const key of Object.keys(call.parameters ?? {})) expect(declared).toContain(key);
    }
    expect(standIn.stack(STACK)?.parameters).toEqual({
      VpcSubnetIds: 'subnet-0a1b2c3d,subnet-0b2c3d4e',
      VpcSecurityGroupIds: 'sg-0c3d4e5f',
      AlarmTopicArn: TOPIC,
    });
  });

  it('declares the VPC parameters with AWS-specific types, so CloudFormation checks the ids first', () => {
    const parameters = standIn.stack(STACK)!.template.Parameters!;
    expect(parameters.VpcSubnetIds?.Type).toBe('List<AWS::EC2::Subnet::Id>');
    expect(parameters.VpcSecurityGroupIds?.Type).toBe('List<AWS::EC2::SecurityGroup::Id>');
  });

  it('deploys again over the existing stack (an update, nothing refused)', async () => {
    const again = await deploy(standIn, [...VPC]);
    expect(again.status, again.output).toBe(0);
    expect(again.calls.filter((call) => call.refused && call.action !== 'DescribeStacks')).toEqual([]);
    expect(standIn.stack(STACK)?.parameters.AlarmTopicArn).toBe('');
  }, 600_000);
});

describe('osls deploy with wrong parameters', () => {
  let standIn: CloudFormationStandIn;
  beforeAll(async () => {
    standIn = await startCloudFormationStandIn({ s3Endpoint, checkTemplate });
  });
  afterAll(async () => standIn?.stop());

  it('refuses a deploy without the VPC before any call to AWS, naming the parameters', async () => {
    const run = await deploy(standIn, []);
    expect(run.status).not.toBe(0);
    expect(run.output).toContain('vpcSubnetIds is required to deploy');
    expect(run.output).toContain('vpcSecurityGroupIds is required to deploy');
    expect(stackChanges(run.calls)).toEqual([]);
  }, 600_000);

  it('refuses a secret ARN where the secret name belongs, and a malformed subnet id', async () => {
    const run = await deploy(standIn, [
      '--param=vpcSubnetIds=subnet-0a1b2c3d,sub-xyz',
      '--param=vpcSecurityGroupIds=sg-0c3d4e5f',
      '--param=tenantRegistrySecretId=arn:aws:secretsmanager:eu-central-1:123456789012:secret:x-AbCdEf',
    ]);
    expect(run.status).not.toBe(0);
    expect(run.output).toMatch(/vpcSubnetIds must be comma-separated subnet ids/);
    expect(run.output).toMatch(/tenantRegistrySecretId must be the name of a Secrets Manager secret/);
    expect(stackChanges(run.calls)).toEqual([]);
  }, 600_000);
});
