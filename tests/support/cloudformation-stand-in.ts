import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CreateBucketCommand, GetObjectCommand, S3Client } from '@aws-sdk/client-s3';

/**
 * A stand-in of the CloudFormation API (the AWS Query protocol the SDK speaks) on loopback, with
 * STS's GetCallerIdentity, for running `osls deploy` without AWS. It keeps one account's stacks in
 * memory and refuses what CloudFormation refuses before it creates anything, which is where a
 * first deploy fails:
 *
 * - a parameter passed that the template does not declare ("Parameters: [X] do not exist in the
 *   template"), a parameter without a default that is not passed ("must have values");
 * - a parameter value that does not fit its type (AWS-specific types: the ids' shape; an empty
 *   list for `List<AWS::EC2::Subnet::Id>`) or its `AllowedPattern`;
 * - a template the given `checkTemplate` finds problems in (CloudFormation's resource schemas).
 *
 * Templates come in the call (`TemplateBody`) or from the S3 emulator (`TemplateURL`, as the
 * framework uploads them to the deployment bucket). Every call is recorded for the test to read.
 */

export interface RecordedCall {
  readonly action: string;
  readonly params: Readonly<Record<string, string>>;
  /** The template of a create/update/validate call, parsed. */
  readonly template?: Template;
  /** The parameters the call passed, by key. */
  readonly parameters?: Readonly<Record<string, string>>;
  /** What the stand-in refused the call for (as CloudFormation's message), if it did. */
  readonly refused?: string;
}

export interface Template {
  Parameters?: Record<
    string,
    { Type: string; Default?: unknown; AllowedPattern?: string; AllowedValues?: unknown[] }
  >;
  Resources?: Record<string, { Type: string; Properties?: Record<string, unknown> }>;
  Outputs?: Record<string, { Value: unknown }>;
}

export interface CloudFormationStandIn {
  readonly endpoint: string;
  readonly calls: readonly RecordedCall[];
  /** The stack's template as last deployed, and its parameter values. */
  stack(name: string): { status: string; template: Template; parameters: Record<string, string> } | undefined;
  stop(): Promise<void>;
}

export interface StandInOptions {
  /** The S3 emulator holding the deployment bucket (its endpoint). */
  readonly s3Endpoint: string;
  /** Problems CloudFormation would report in the template (empty: none). */
  readonly checkTemplate?: (template: Template) => Promise<string[]> | string[];
  readonly accountId?: string;
  readonly region?: string;
}

interface ChangeSet {
  readonly id: string;
  readonly name: string;
  readonly stackName: string;
  readonly type: 'CREATE' | 'UPDATE';
  readonly template: Template;
  readonly parameters: Record<string, string>;
}

interface Stack {
  readonly id: string;
  readonly name: string;
  status: string;
  template: Template;
  parameters: Record<string, string>;
  /** Physical ids by logical id. */
  physical: Map<string, string>;
  /** Newest first, as DescribeStackEvents answers. */
  events: string[];
}

class ValidationError extends Error {}

/** The shapes of the AWS-specific parameter types the service uses (CloudFormation checks that the ids exist, too). */
const AWS_ID_SHAPES: Record<string, RegExp> = {
  'AWS::EC2::Subnet::Id': /^subnet-[0-9a-f]{8,17}$/,
  'AWS::EC2::SecurityGroup::Id': /^sg-[0-9a-f]{8,17}$/,
  'AWS::EC2::VPC::Id': /^vpc-[0-9a-f]{8,17}$/,
};

const xmlEscape = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** `<Name>value</Name>` for a flat record (undefined values left out). */
const fields = (record: Record<string, string | undefined>) =>
  Object.entries(record)
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => `<${name}>${xmlEscape(value!)}</${name}>`)
    .join('');

const members = (items: string[]) => items.map((item) => `<member>${item}</member>`).join('');

/** `Parameters.member.N.ParameterKey/Value` of a Query request, by key. */
function queryParameters(params: Record<string, string>): Record<string, string> {
  const parameters: Record<string, string> = {};
  for (let n = 1; params[`Parameters.member.${n}.ParameterKey`] !== undefined; n++) {
    parameters[params[`Parameters.member.${n}.ParameterKey`]!] =
      params[`Parameters.member.${n}.ParameterValue`] ?? '';
  }
  return parameters;
}

/** Refuses the parameters as CloudFormation does; answers every parameter's value in force. */
export function resolveStackParameters(
  template: Template,
  passed: Record<string, string>,
): Record<string, string> {
  const declared = template.Parameters ?? {};
  const undeclared = Object.keys(passed).filter((key) => !(key in declared));
  if (undeclared.length > 0) {
    throw new ValidationError(`Parameters: [${undeclared.join(', ')}] do not exist in the template`);
  }
  const missing = Object.entries(declared)
    .filter(([key, parameter]) => !(key in passed) && parameter.Default === undefined)
    .map(([key]) => key);
  if (missing.length > 0) throw new ValidationError(`Parameters: [${missing.join(', ')}] must have values`);
  const values: Record<string, string> = {};
  for (const [key, parameter] of Object.entries(declared)) {
    const value = key in passed ? passed[key]! : String(parameter.Default);
    const list = /^List<(.+)>$/.exec(parameter.Type);
    const idType = list ? list[1]! : parameter.Type;
    const shape = AWS_ID_SHAPES[idType];
    if (shape) {
      const ids = list ? value.split(',') : [value];
      const bad = ids.filter((id) => !shape.test(id.trim()));
      if (bad.length > 0 || value === '') {
        throw new ValidationError(
          `Parameter validation failed: parameter value ${bad.join(',') || '(empty)'} for parameter name ${key} does not exist. Rollback requested by user.`,
        );
      }
    }
    if (parameter.AllowedPattern && !new RegExp(`^(?:${parameter.AllowedPattern})$`).test(value)) {
      throw new ValidationError(`Parameter '${key}' must match pattern ${parameter.AllowedPattern}`);
    }
    if (parameter.AllowedValues && !parameter.AllowedValues.map(String).includes(value)) {
      throw new ValidationError(`Parameter '${key}' must be one of AllowedValues`);
    }
    values[key] = value;
  }
  return values;
}

export async function startCloudFormationStandIn(options: StandInOptions): Promise<CloudFormationStandIn> {
  const accountId = options.accountId ?? '123456789012';
  const region = options.region ?? 'eu-central-1';
  const s3 = new S3Client({
    endpoint: options.s3Endpoint,
    forcePathStyle: true,
    region,
    credentials: { accessKeyId: 'stand-in', secretAccessKey: 'stand-in' },
  });
  const calls: RecordedCall[] = [];
  const stacks = new Map<string, Stack>();
  const changeSets = new Map<string, ChangeSet>();

  const stackNamed = (nameOrId: string) =>
    stacks.get(nameOrId) ?? [...stacks.values()].find((stack) => stack.id === nameOrId);

  /** The template of a call: its body, or the object its URL names in the S3 emulator. */
  async function templateOf(params: Record<string, string>): Promise<Template> {
    let text = params.TemplateBody;
    if (text === undefined && params.TemplateURL) {
      // https://s3.<region>.amazonaws.com/<bucket>/<key>: read from the emulator, never fetched.
      const [bucket, ...key] = new URL(params.TemplateURL).pathname.slice(1).split('/');
      const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key.join('/') }));
      text = await object.Body!.transformToString();
    }
    if (text === undefined)
      throw new ValidationError('Either Template URL or Template Body must be specified.');
    let template: Template;
    try {
      template = JSON.parse(text) as Template;
    } catch {
      throw new ValidationError('Template format error: JSON not well-formed.');
    }
    const problems = (await options.checkTemplate?.(template)) ?? [];
    if (problems.length > 0) throw new ValidationError(`Template format error: ${problems.join('; ')}`);
    return template;
  }

  const event = (stack: Stack, logicalId: string, type: string, status: string) =>
    `<member>${fields({
      StackId: stack.id,
      EventId: randomUUID(),
      StackName: stack.name,
      LogicalResourceId: logicalId,
      PhysicalResourceId: stack.physical.get(logicalId) ?? stack.id,
      ResourceType: type,
      Timestamp: new Date().toISOString(),
      ResourceStatus: status,
    })}</member>`;

  /** Carries out a change set at once: every resource of the template exists afterwards. */
  async function execute(changeSet: ChangeSet): Promise<void> {
    const stack = stacks.get(changeSet.stackName)!;
    const verb = changeSet.type === 'CREATE' ? 'CREATE' : 'UPDATE';
    stack.events.unshift(event(stack, stack.name, 'AWS::CloudFormation::Stack', `${verb}_IN_PROGRESS`));
    for (const [logicalId, resource] of Object.entries(changeSet.template.Resources ?? {})) {
      if (!stack.physical.has(logicalId)) {
        const physical =
          resource.Type === 'AWS::S3::Bucket'
            ? `${stack.name}-${logicalId}-${randomUUID().slice(0, 8)}`.toLowerCase().slice(0, 63)
            : `${stack.name}-${logicalId}-${randomUUID().slice(0, 8)}`;
        if (resource.Type === 'AWS::S3::Bucket') await s3.send(new CreateBucketCommand({ Bucket: physical }));
        stack.physical.set(logicalId, physical);
      }
      stack.events.unshift(event(stack, logicalId, resource.Type, `${verb}_COMPLETE`));
    }
    stack.template = changeSet.template;
    stack.parameters = changeSet.parameters;
    stack.status = `${verb}_COMPLETE`;
    stack.events.unshift(event(stack, stack.name, 'AWS::CloudFormation::Stack', stack.status));
  }

  const outputs = (stack: Stack) =>
    members(
      Object.keys(stack.template.Outputs ?? {}).map((key) =>
        fields({
          OutputKey: key,
          OutputValue:
            key === 'ServerlessDeploymentBucketName'
              ? stack.physical.get('ServerlessDeploymentBucket')
              : key === 'HttpApiUrl'
                ? `https://${stack.physical.get('HttpApi') ?? 'api'}.execute-api.${region}.amazonaws.com`
                : `stand-in:${key}`,
        }),
      ),
    );

  const missingStack = (name: string) => new ValidationError(`Stack with id ${name} does not exist`);

  /** Answers one Query action: the inner XML of its `<Action>Result>`. */
  async function act(
    action: string,
    params: Record<string, string>,
    call: { template?: Template; parameters?: Record<string, string> },
  ): Promise<string> {
    switch (action) {
      case 'GetCallerIdentity':
        return fields({
          Arn: `arn:aws:iam::${accountId}:user/stand-in`,
          UserId: 'STANDIN',
          Account: accountId,
        });
      case 'DescribeStacks': {
        const stack = stackNamed(params.StackName ?? '');
        if (!stack || stack.status === 'REVIEW_IN_PROGRESS') throw missingStack(params.StackName ?? '');
        return `<Stacks><member>${fields({
          StackId: stack.id,
          StackName: stack.name,
          StackStatus: stack.status,
          CreationTime: new Date().toISOString(),
        })}<Outputs>${outputs(stack)}</Outputs></member></Stacks>`;
      }
      case 'CreateChangeSet': {
        const type = params.ChangeSetType === 'CREATE' ? 'CREATE' : 'UPDATE';
        const name = params.StackName!;
        const existing = stacks.get(name);
        if (type === 'CREATE' && existing && existing.status !== 'REVIEW_IN_PROGRESS') {
          throw new ValidationError(`Stack [${name}] already exists and cannot be created again`);
        }
        if (type === 'UPDATE' && (!existing || existing.status === 'REVIEW_IN_PROGRESS'))
          throw missingStack(name);
        call.parameters = queryParameters(params);
        call.template = await templateOf(params);
        const parameters = resolveStackParameters(call.template, call.parameters);
        const stack: Stack =
          existing ??
          ({
            id: `arn:aws:cloudformation:${region}:${accountId}:stack/${name}/${randomUUID()}`,
            name,
            status: 'REVIEW_IN_PROGRESS',
            template: {},
            parameters: {},
            physical: new Map(),
            events: [],
          } satisfies Stack);
        stacks.set(name, stack);
        const changeSet: ChangeSet = {
          id: `arn:aws:cloudformation:${region}:${accountId}:changeSet/${params.ChangeSetName}/${randomUUID()}`,
          name: params.ChangeSetName!,
          stackName: name,
          type,
          template: call.template,
          parameters,
        };
        changeSets.set(changeSet.name, changeSet);
        changeSets.set(changeSet.id, changeSet);
        return fields({ Id: changeSet.id, StackId: stack.id });
      }
      case 'DescribeChangeSet': {
        const changeSet = changeSets.get(params.ChangeSetName ?? '');
        if (!changeSet) throw new ValidationError(`ChangeSet [${params.ChangeSetName}] does not exist`);
        const stack = stacks.get(changeSet.stackName)!;
        const changes = Object.entries(changeSet.template.Resources ?? {}).map(
          ([logicalId, resource]) =>
            `<Type>Resource</Type><ResourceChange>${fields({
              Action: stack.physical.has(logicalId) ? 'Modify' : 'Add',
              LogicalResourceId: logicalId,
              ResourceType: resource.Type,
            })}</ResourceChange>`,
        );
        return `${fields({
          ChangeSetName: changeSet.name,
          ChangeSetId: changeSet.id,
          StackId: stack.id,
          StackName: stack.name,
          Status: 'CREATE_COMPLETE',
          ExecutionStatus: 'AVAILABLE',
        })}<Changes>${members(changes)}</Changes>`;
      }
      case 'ExecuteChangeSet': {
        const changeSet = changeSets.get(params.ChangeSetName ?? '');
        if (!changeSet) throw new ValidationError(`ChangeSet [${params.ChangeSetName}] does not exist`);
        await execute(changeSet);
        return '';
      }
      case 'DeleteChangeSet':
        changeSets.delete(params.ChangeSetName ?? '');
        return '';
      case 'DescribeStackEvents': {
        const stack = stackNamed(params.StackName ?? '');
        if (!stack) throw missingStack(params.StackName ?? '');
        return `<StackEvents>${stack.events.join('')}</StackEvents>`;
      }
      case 'DescribeStackResource': {
        const stack = stackNamed(params.StackName ?? '');
        const logicalId = params.LogicalResourceId ?? '';
        const resource = stack?.template.Resources?.[logicalId];
        if (!stack || !resource) {
          throw new ValidationError(`Resource ${logicalId} does not exist for stack ${params.StackName}`);
        }
        return `<StackResourceDetail>${fields({
          StackName: stack.name,
          StackId: stack.id,
          LogicalResourceId: logicalId,
          PhysicalResourceId: stack.physical.get(logicalId),
          ResourceType: resource.Type,
          LastUpdatedTimestamp: new Date().toISOString(),
          ResourceStatus: 'CREATE_COMPLETE',
        })}</StackResourceDetail>`;
      }
      case 'ListStackResources': {
        const stack = stackNamed(params.StackName ?? '');
        if (!stack) throw missingStack(params.StackName ?? '');
        return `<StackResourceSummaries>${members(
          Object.entries(stack.template.Resources ?? {}).map(([logicalId, resource]) =>
            fields({
              LogicalResourceId: logicalId,
              PhysicalResourceId: stack.physical.get(logicalId),
              ResourceType: resource.Type,
              LastUpdatedTimestamp: new Date().toISOString(),
              ResourceStatus: 'CREATE_COMPLETE',
            }),
          ),
        )}</StackResourceSummaries>`;
      }
      case 'GetTemplate': {
        const stack = stackNamed(params.StackName ?? '');
        if (!stack) throw missingStack(params.StackName ?? '');
        return fields({ TemplateBody: JSON.stringify(stack.template) });
      }
      case 'ValidateTemplate': {
        call.template = await templateOf(params);
        return `<Parameters>${members(
          Object.entries(call.template.Parameters ?? {}).map(([key, parameter]) =>
            fields({
              ParameterKey: key,
              DefaultValue: parameter.Default === undefined ? undefined : String(parameter.Default),
              NoEcho: 'false',
            }),
          ),
        )}</Parameters>`;
      }
      case 'ListExports':
        return '<Exports></Exports>';
      default:
        throw new ValidationError(`The stand-in does not know the action ${action}`);
    }
  }

  const answer = (response: ServerResponse, status: number, body: string) => {
    response.writeHead(status, { 'content-type': 'text/xml', 'x-amzn-requestid': randomUUID() });
    response.end(`<?xml version="1.0"?>${body}`);
  };

  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      // The deploy asks Lambda whether each function exists (to compare code hashes): on a first
      // deploy none does, which Lambda answers with a 404 ResourceNotFoundException.
      const lambdaFunction = /^\/2015-03-31\/functions\/([^/?]+)/.exec(request.url ?? '');
      if (lambdaFunction) {
        calls.push({ action: `lambda:${request.method} ${lambdaFunction[0]}`, params: {} });
        response.writeHead(404, {
          'content-type': 'application/json',
          'x-amzn-errortype': 'ResourceNotFoundException',
        });
        response.end(JSON.stringify({ Type: 'User', Message: `Function not found: ${lambdaFunction[1]}` }));
        return;
      }
      const params = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
      const action = params.Action ?? `(not a Query call: ${request.method} ${request.url})`;
      const call: { template?: Template; parameters?: Record<string, string> } = {};
      act(action, params, call).then(
        (result) => {
          calls.push({ action, params, ...call });
          const xmlns =
            action === 'GetCallerIdentity'
              ? 'https://sts.amazonaws.com/doc/2011-06-15/'
              : 'http://cloudformation.amazonaws.com/doc/2010-05-15/';
          answer(
            response,
            200,
            `<${action}Response xmlns="${xmlns}"><${action}Result>${result}</${action}Result><ResponseMetadata><RequestId>${randomUUID()}</RequestId></ResponseMetadata></${action}Response>`,
          );
        },
        (error: unknown) => {
          const message = error instanceof Error ? error.message : String(error);
          calls.push({ action, params, ...call, refused: message });
          const known = error instanceof ValidationError;
          answer(
            response,
            known ? 400 : 500,
            `<ErrorResponse><Error><Type>${known ? 'Sender' : 'Receiver'}</Type><Code>${known ? 'ValidationError' : 'InternalFailure'}</Code><Message>${xmlEscape(message)}</Message></Error><RequestId>${randomUUID()}</RequestId></ErrorResponse>`,
          );
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    endpoint: `http://127.0.0.1:${port}`,
    calls,
    stack(name) {
      const stack = stacks.get(name);
      return stack && { status: stack.status, template: stack.template, parameters: stack.parameters };
    },
    async stop() {
      s3.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
