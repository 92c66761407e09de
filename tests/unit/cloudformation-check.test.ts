// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${…} here is Fn::Sub syntax of CloudFormation, not a JavaScript template.
import { beforeAll, describe, expect, it } from 'vitest';
import {
  checkTemplate,
  checkTemplateWith,
  declaredParameters,
  loadResourceSpec,
  parametersWithoutDefault,
  parseTemplate,
  type ResourceSpec,
} from '../support/cloudformation-check.js';

// Small hand-written templates, each with one kind of defect, so the checker is shown to fail
// where CloudFormation would (a checker that finds nothing in the packaged template proves
// little by itself).

let spec: ResourceSpec;
beforeAll(async () => {
  spec = await loadResourceSpec();
});

type Json = Record<string, unknown>;

const queue = (properties: Json = {}, extra: Json = {}) => ({
  Type: 'AWS::SQS::Queue',
  Properties: properties,
  ...extra,
});
const role = (properties: Json = {}) => ({
  Type: 'AWS::IAM::Role',
  Properties: {
    AssumeRolePolicyDocument: {
      Version: '2012-10-17',
      Statement: [
        { Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' },
      ],
    },
    ...properties,
  },
});
const fn = (properties: Json = {}) => ({
  Type: 'AWS::Lambda::Function',
  Properties: {
    Code: { ZipFile: 'exports.handler = async () => {}' },
    Role: { 'Fn::GetAtt': ['Role', 'Arn'] },
    Runtime: 'nodejs22.x',
    Handler: 'index.handler',
    ...properties,
  },
});
/** A template with a role (`Role`) beside `resources`, and `sections` on top. */
const template = (resources: Json, sections: Json = {}) => ({
  AWSTemplateFormatVersion: '2010-09-09',
  Resources: { Role: role(), ...resources },
  ...sections,
});
const check = (t: unknown) => checkTemplateWith(spec, t);

describe('checkTemplate on valid templates', () => {
  it('finds nothing in a template that uses every kind of reference', async () => {
    const valid = template(
      {
        DeadLetters: queue({ MessageRetentionPeriod: 1209600 }),
        Jobs: queue(
          {
            // CloudFormation reads a number given as a string.
            VisibilityTimeout: '540',
            RedrivePolicy: {
              deadLetterTargetArn: { 'Fn::GetAtt': ['DeadLetters', 'Arn'] },
              maxReceiveCount: 3,
            },
            Tags: [{ Key: 'stage', Value: { Ref: 'AWS::StackName' } }],
          },
          { DependsOn: ['DeadLetters'], DeletionPolicy: 'Retain' },
        ),
        Alerts: { Type: 'AWS::SNS::Topic', Condition: 'WithAlerts' },
        Worker: fn({
          Timeout: 90,
          VpcConfig: {
            SubnetIds: { Ref: 'Subnets' },
            SecurityGroupIds: { 'Fn::Split': [',', { Ref: 'SecurityGroups' }] },
          },
          Environment: {
            Variables: {
              QUEUE_URL: { Ref: 'Jobs' },
              QUEUE_ARN: { 'Fn::Sub': '${Jobs.Arn}' },
              REGION_AND_NAME: {
                'Fn::Sub': ['${AWS::Region}-${Name}-${!Literal}', { Name: { Ref: 'Stage' } }],
              },
              ALERTS: { 'Fn::If': ['WithAlerts', { Ref: 'Alerts' }, { Ref: 'AWS::NoValue' }] },
              FIRST_AZ: { 'Fn::Select': [0, { 'Fn::GetAZs': { Ref: 'AWS::Region' } }] },
              JOINED: { 'Fn::Join': [',', [{ Ref: 'Stage' }, { 'Fn::ImportValue': 'shared-name' }]] },
              SIZE: { 'Fn::FindInMap': ['Sizes', { Ref: 'Stage' }, 'Memory'] },
            },
          },
        }),
        Mapping: {
          Type: 'AWS::Lambda::EventSourceMapping',
          Properties: {
            EventSourceArn: { 'Fn::GetAtt': 'Jobs.Arn' },
            FunctionName: { Ref: 'Worker' },
            FunctionResponseTypes: ['ReportBatchItemFailures'],
            Enabled: 'true',
          },
        },
        Seed: {
          Type: 'Custom::Seed',
          Properties: { ServiceToken: { 'Fn::GetAtt': ['Worker', 'Arn'] }, Anything: { at: ['all'] } },
        },
      },
      {
        Parameters: {
          Stage: { Type: 'String', Default: 'dev', AllowedValues: ['dev', 'prod'] },
          Subnets: { Type: 'List<AWS::EC2::Subnet::Id>' },
          SecurityGroups: { Type: 'String', Default: 'sg-1,sg-2', AllowedPattern: '(sg-[0-9a-z]+,?)+' },
          AlertTopic: { Type: 'String', Default: '' },
          Image: { Type: 'AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>', Default: '/aws/ami' },
          Count: { Type: 'Number', Default: 3, MinValue: 1, MaxValue: 10 },
        },
        Mappings: { Sizes: { dev: { Memory: '512' }, prod: { Memory: '1024' } } },
        Conditions: {
          WithAlerts: { 'Fn::Not': [{ 'Fn::Equals': [{ Ref: 'AlertTopic' }, ''] }] },
          ProdWithAlerts: {
            'Fn::And': [{ Condition: 'WithAlerts' }, { 'Fn::Equals': [{ Ref: 'Stage' }, 'prod'] }],
          },
        },
        Outputs: {
          QueueUrl: { Value: { Ref: 'Jobs' }, Export: { Name: { 'Fn::Sub': '${AWS::StackName}-queue' } } },
          SeedId: { Value: { 'Fn::GetAtt': ['Seed', 'WhateverItReturns'] } },
          AlertsArn: { Condition: 'WithAlerts', Value: { Ref: 'Alerts' } },
        },
      },
    );
    expect(check(valid)).toEqual([]);
    // The same through the asynchronous entry point, and as text.
    expect(await checkTemplate(valid)).toEqual([]);
    expect(await checkTemplate(JSON.stringify(valid))).toEqual([]);
  });

  it('reads YAML with the short forms of the functions', () => {
    const body = `
Parameters:
  Stage: { Type: String, Default: dev }
Conditions:
  IsProd: !Equals [!Ref Stage, prod]
Resources:
  Jobs:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: !Sub "\${AWS::StackName}-\${Stage}"
      RedrivePolicy:
        deadLetterTargetArn: !GetAtt DeadLetters.Arn
        maxReceiveCount: 3
      Tags: !If [IsProd, [{ Key: a, Value: !Ref AWS::Region }], !Ref AWS::NoValue]
  DeadLetters:
    Type: AWS::SQS::Queue
Outputs:
  Arn:
    Value: !Join [":", [!GetAtt Jobs.Arn, !Select [0, !Split [",", !Ref Stage]]]]
`;
    const parsed = parseTemplate(body) as { Resources: { Jobs: { Properties: Json } } };
    expect(parsed.Resources.Jobs.Properties.RedrivePolicy).toEqual({
      deadLetterTargetArn: { 'Fn::GetAtt': ['DeadLetters', 'Arn'] },
      maxReceiveCount: 3,
    });
    expect(check(body)).toEqual([]);
    expect(check(`${body}  Broken:\n    Value: !GetAtt Nothing.Arn\n`)).toEqual([
      'Outputs.Broken.Value["Fn::GetAtt"]: Nothing is not a resource',
    ]);
  });

  it('accepts what the Serverless Framework generates for a function and its HTTP route', () => {
    const t = template({
      HttpApi: { Type: 'AWS::ApiGatewayV2::Api', Properties: { Name: 'api', ProtocolType: 'HTTP' } },
      HttpApiStage: {
        Type: 'AWS::ApiGatewayV2::Stage',
        Properties: { ApiId: { Ref: 'HttpApi' }, StageName: '$default', AutoDeploy: true },
      },
      Worker: fn({ MemorySize: 1024, Architectures: ['arm64'] }),
      WorkerVersion: {
        Type: 'AWS::Lambda::Version',
        DeletionPolicy: 'Retain',
        Properties: { FunctionName: { Ref: 'Worker' }, CodeSha256: 'abc=' },
      },
      Permission: {
        Type: 'AWS::Lambda::Permission',
        Properties: {
          FunctionName: { 'Fn::GetAtt': ['Worker', 'Arn'] },
          Action: 'lambda:InvokeFunction',
          Principal: 'apigateway.amazonaws.com',
          SourceArn: {
            'Fn::Join': [
              '',
              ['arn:', { Ref: 'AWS::Partition' }, ':execute-api:', { Ref: 'AWS::Region' }, ':*'],
            ],
          },
        },
      },
      Integration: {
        Type: 'AWS::ApiGatewayV2::Integration',
        Properties: {
          ApiId: { Ref: 'HttpApi' },
          IntegrationType: 'AWS_PROXY',
          IntegrationUri: { 'Fn::GetAtt': ['Worker', 'Arn'] },
          PayloadFormatVersion: '2.0',
          TimeoutInMillis: 30000,
        },
      },
      Route: {
        Type: 'AWS::ApiGatewayV2::Route',
        Properties: {
          ApiId: { Ref: 'HttpApi' },
          RouteKey: 'GET /x',
          Target: { 'Fn::Join': ['/', ['integrations', { Ref: 'Integration' }]] },
        },
        DependsOn: 'Integration',
      },
    });
    expect(check(t)).toEqual([]);
  });
});

describe('checkTemplate finds', () => {
  it('an unknown resource type, and one that needs a transform', () => {
    expect(check(template({ Thing: { Type: 'AWS::SQS::Queueue' } }))).toEqual([
      'Resources.Thing.Type: "AWS::SQS::Queueue" is not a CloudFormation resource type',
    ]);
    expect(
      check(template({ Fn: { Type: 'AWS::Serverless::Function', Properties: { Runtime: 'nodejs22.x' } } })),
    ).toContain('Resources.Fn.Type: AWS::Serverless::Function needs Transform: AWS::Serverless-2016-10-31');
    expect(check(template({ Thing: { Properties: {} } }))).toEqual(['Resources.Thing.Type: required']);
  });

  it('an unknown property, at the top and in a nested property type', () => {
    expect(check(template({ Jobs: queue({ VisibilityTimeOut: 30 }) }))).toEqual([
      'Resources.Jobs.Properties.VisibilityTimeOut: unknown property (AWS::SQS::Queue has no VisibilityTimeOut)',
    ]);
    expect(check(template({ Worker: fn({ VpcConfig: { SubnetId: ['subnet-1'] } }) }))).toEqual([
      'Resources.Worker.Properties.VpcConfig.SubnetId: unknown property (VpcConfig has no SubnetId)',
    ]);
    expect(check(template({ Jobs: queue({ Tags: [{ Key: 'a', Value: 'b', Extra: 'c' }] }) }))).toEqual([
      'Resources.Jobs.Properties.Tags[0].Extra: unknown property (Tag has no Extra)',
    ]);
  });

  it('a missing required property, at the top and in a nested property type', () => {
    const { Role: _, ...withoutRole } = fn().Properties;
    expect(check(template({ Worker: { Type: 'AWS::Lambda::Function', Properties: withoutRole } }))).toEqual([
      'Resources.Worker.Properties.Role: required property missing',
    ]);
    expect(
      check(
        template({
          Other: role({ Policies: [{ PolicyDocument: { Version: '2012-10-17', Statement: [] } }] }),
        }),
      ),
    ).toEqual(['Resources.Other.Properties.Policies[0].PolicyName: required property missing']);
    expect(check(template({ Topic: { Type: 'AWS::SNS::Subscription' } }))).toEqual(
      expect.arrayContaining(['Resources.Topic.Properties.Protocol: required property missing']),
    );
    expect(check(template({ Seed: { Type: 'Custom::Seed', Properties: {} } }))).toEqual([
      'Resources.Seed.Properties.ServiceToken: required property missing',
    ]);
  });

  it('a value of the wrong type', () => {
    expect(
      check(
        template({
          Worker: fn({
            // An object where a string goes, a list where a number goes, a number for a list.
            Handler: { file: 'index' },
            Timeout: [30],
            Architectures: 64,
            // A string that reads as no number, a boolean given as a number.
            MemorySize: 'large',
            Environment: { Variables: { A: 'ok', B: ['x'] } },
            VpcConfig: 'subnet-1',
          }),
          Jobs: queue({ FifoQueue: 1, Tags: [{ Key: 'a', Value: { Ref: 'AWS::NotificationARNs' } }] }),
        }),
      ),
    ).toEqual([
      'Resources.Worker.Properties.Handler: an object where a string is expected',
      'Resources.Worker.Properties.Timeout: a list where an integer is expected',
      'Resources.Worker.Properties.Architectures: the number 64 where a list (of string) is expected',
      'Resources.Worker.Properties.MemorySize: the string "large" where an integer is expected',
      'Resources.Worker.Properties.Environment.Variables.B: a list where a string is expected',
      'Resources.Worker.Properties.VpcConfig: the string "subnet-1" where an object (VpcConfig) is expected',
      'Resources.Jobs.Properties.FifoQueue: the number 1 where a boolean is expected',
      'Resources.Jobs.Properties.Tags[0].Value: Ref gives a list where a string is expected',
    ]);
  });

  it('a function giving a list where one value goes, and one value where a list goes', () => {
    const t = template(
      {
        Worker: fn({
          Handler: { 'Fn::Split': [',', 'a,b'] },
          Runtime: { Ref: 'Subnets' },
          Architectures: { Ref: 'Stage' },
          Description: { 'Fn::If': ['Always', 'fine', ['not', 'fine']] },
          Layers: { 'Fn::GetAtt': ['Role', 'Arn'] },
          VpcConfig: { SubnetIds: { 'Fn::Split': [',', { Ref: 'Subnets' }] } },
        }),
      },
      {
        Parameters: { Stage: { Type: 'String' }, Subnets: { Type: 'CommaDelimitedList' } },
        Conditions: { Always: { 'Fn::Equals': ['a', 'a'] } },
      },
    );
    expect(check(t)).toEqual([
      'Resources.Worker.Properties.Runtime: Ref gives a list where a string is expected',
      'Resources.Worker.Properties.Handler: Fn::Split gives a list where a string is expected',
      'Resources.Worker.Properties.Architectures: Ref gives a single value where a list (of string) is expected',
      'Resources.Worker.Properties.Description["Fn::If"][2]: a list where a string is expected',
      'Resources.Worker.Properties.Layers: Fn::GetAtt gives a single value where a list (of string) is expected',
      'Resources.Worker.Properties.VpcConfig.SubnetIds["Fn::Split"][1]: Ref gives a list where a string is expected',
    ]);
  });

  it('a value that is not one of the allowed ones, and a null', () => {
    expect(check(template({ Worker: fn({ PackageType: 'Tarball', Description: null }) }))).toEqual([
      'Resources.Worker.Properties.PackageType: the string "Tarball" is not one of Image, Zip',
      'Resources.Worker.Properties.Description: null; CloudFormation does not accept null values',
    ]);
  });

  it('Ref, Fn::GetAtt, Fn::Sub and DependsOn to nothing, and unknown attributes', () => {
    const t = template({
      Jobs: queue({ QueueName: { Ref: 'Nothing' } }, { DependsOn: ['Role', 'Missing'] }),
      Worker: fn({
        Role: { 'Fn::GetAtt': ['Rol', 'Arn'] },
        Description: { 'Fn::GetAtt': ['Jobs', 'Url'] },
        Handler: { 'Fn::GetAtt': 'Jobs.QueueUrl' },
        Environment: {
          Variables: {
            A: { 'Fn::Sub': 'arn:${AWS::Partition}:${Nowhere}:${Jobs.Nope}:${!NotAVariable}' },
            B: { 'Fn::Sub': ['${Mine}-${Theirs}', { Mine: 'x' }] },
            C: { 'Fn::Sub': '${AWS::Regoin}' },
            D: { 'Fn::Sub': 'arn:aws:s3:::bucket/${aws:username}' },
          },
        },
      }),
    });
    expect(check(t)).toEqual([
      'Resources.Jobs.DependsOn[1]: no resource Missing',
      'Resources.Jobs.Properties.QueueName.Ref: Nothing is not a resource, a parameter or a pseudo parameter',
      'Resources.Worker.Properties.Role["Fn::GetAtt"]: Rol is not a resource',
      'Resources.Worker.Properties.Description["Fn::GetAtt"]: AWS::SQS::Queue has no attribute Url',
      'Resources.Worker.Properties.Environment.Variables.A["Fn::Sub"] ${Nowhere}: Nowhere is not a resource, a parameter or a pseudo parameter',
      'Resources.Worker.Properties.Environment.Variables.A["Fn::Sub"] ${Jobs.Nope}: AWS::SQS::Queue has no attribute Nope',
      'Resources.Worker.Properties.Environment.Variables.B["Fn::Sub"] ${Theirs}: Theirs is not a resource, a parameter or a pseudo parameter',
      'Resources.Worker.Properties.Environment.Variables.C["Fn::Sub"] ${AWS::Regoin}: AWS::Regoin is not a resource, a parameter or a pseudo parameter',
      // An IAM policy variable in Fn::Sub has to be written ${!aws:username}.
      'Resources.Worker.Properties.Environment.Variables.D["Fn::Sub"] ${aws:username}: aws:username is not a resource, a parameter or a pseudo parameter',
    ]);
  });

  it('conditions that are not declared, and a conditional resource named where it may not exist', () => {
    const t = template(
      {
        Alerts: { Type: 'AWS::SNS::Topic', Condition: 'WithAlerts' },
        Jobs: queue({ QueueName: { 'Fn::If': ['WithAlert', 'a', 'b'] } }, { Condition: 'Nope' }),
        Worker: fn({
          Description: { Ref: 'Alerts' },
          Environment: { Variables: { OK: { 'Fn::If': ['WithAlerts', { Ref: 'Alerts' }, ''] } } },
        }),
      },
      {
        Parameters: { Topic: { Type: 'String', Default: '' } },
        Conditions: {
          WithAlerts: { 'Fn::Not': [{ 'Fn::Equals': [{ Ref: 'Topic' }, ''] }] },
          Both: { 'Fn::And': [{ Condition: 'WithAlerts' }, { Condition: 'Other' }] },
          OnResource: { 'Fn::Equals': [{ Ref: 'Role' }, ''] },
        },
        Outputs: { AlertsArn: { Value: { Ref: 'Alerts' } } },
      },
    );
    expect(check(t)).toEqual([
      'Conditions.Both["Fn::And"][1].Condition: no condition Other in Conditions',
      'Conditions.OnResource["Fn::Equals"][0].Ref: conditions can refer only to parameters, not to the resource Role',
      'Resources.Jobs.Condition: no condition Nope in Conditions',
      'Resources.Jobs.Properties.QueueName["Fn::If"][0]: no condition WithAlert in Conditions',
      'Resources.Worker.Properties.Description.Ref: Alerts exists only when WithAlerts holds: name it under the same Condition or in Fn::If [WithAlerts, …]',
      'Outputs.AlertsArn.Value.Ref: Alerts exists only when WithAlerts holds: name it under the same Condition or in Fn::If [WithAlerts, …]',
    ]);
  });

  it('a circular dependency', () => {
    const t = template({
      A: queue({ QueueName: { 'Fn::GetAtt': ['B', 'QueueName'] } }),
      B: queue({}, { DependsOn: 'C' }),
      C: queue({ QueueName: { 'Fn::Sub': '${A}-c' } }),
    });
    expect(check(t)).toEqual(['Resources.A: circular dependency A → B → C → A']);
  });

  it('bad parameter declarations and defaults', () => {
    const t = template(
      {},
      {
        Parameters: {
          Text: { Type: 'string' },
          Subnets: { Type: 'List<AWS::EC2::Subnet>' },
          Missing: { Default: 'x' },
          Pattern: { Type: 'String', Default: 'sg_1', AllowedPattern: 'sg-[0-9a-f]+' },
          Choice: { Type: 'String', Default: 'test', AllowedValues: ['dev', 'prod'] },
          Count: { Type: 'Number', Default: 'ten' },
          Short: { Type: 'String', Default: 'ab', MinLength: 3 },
          Groups: { Type: 'CommaDelimitedList', Default: 'sg-1,sg_2', AllowedPattern: 'sg-[0-9]+' },
          Extra: { Type: 'String', Secret: true },
          Role: { Type: 'String' },
        },
      },
    );
    expect(check(t)).toEqual([
      'Parameters.Role: a resource has the same logical ID',
      'Parameters.Text.Type: "string" is not a parameter type',
      'Parameters.Subnets.Type: "List<AWS::EC2::Subnet>" is not a parameter type',
      'Parameters.Missing.Type: required',
      'Parameters.Pattern.Default: "sg_1" does not match AllowedPattern "sg-[0-9a-f]+"',
      'Parameters.Choice.Default: "test" is not one of AllowedValues (dev, prod)',
      'Parameters.Count.Default: "ten" is not a number',
      'Parameters.Short.Default: "ab" is shorter than MinLength 3',
      'Parameters.Groups.Default: "sg_2" does not match AllowedPattern "sg-[0-9]+"',
      'Parameters.Extra.Secret: not an attribute of a parameter',
    ]);
  });

  it('bad outputs and sections', () => {
    const t = {
      ...template(
        { 'Bad-Name': queue() },
        {
          Outputs: {
            Nothing: { Value: { 'Fn::GetAtt': ['Ghost', 'Arn'] } },
            NoValue: { Description: 'x' },
            AList: { Value: { 'Fn::GetAZs': '' } },
            First: { Value: 'a', Export: { Name: 'shared' } },
            Second: { Value: 'b', Export: { Name: 'shared' } },
          },
        },
      ),
      AWSTemplateFormatVersion: '2010-09-10',
      Resource: {},
    };
    expect(check(t)).toEqual([
      'Resource: not a section of a CloudFormation template',
      'AWSTemplateFormatVersion: the string "2010-09-10": the only version is "2010-09-09"',
      'Resources["Bad-Name"]: a logical ID is 1 to 255 letters and digits',
      'Outputs.Nothing.Value["Fn::GetAtt"]: Ghost is not a resource',
      'Outputs.NoValue.Value: required',
      'Outputs.AList.Value: Fn::GetAZs gives a list where a string is expected',
      'Outputs.Second.Export.Name: "shared" is exported by Outputs.First too',
    ]);
    expect(check({ Resources: {} })).toEqual(['Resources: a template needs at least one resource']);
    expect(check('not: [a template')).toEqual([expect.stringMatching(/^template: not JSON or YAML/)]);
  });

  it('malformed functions, and functions that need a transform', () => {
    const t = template({
      Jobs: queue({
        QueueName: { 'Fn::Join': ['-', 'not-a-list'] },
        DelaySeconds: { 'Fn::Length': [1, 2] },
        RedrivePolicy: { 'Fn::ToJsonString': { maxReceiveCount: 3 } },
        KmsMasterKeyId: { 'Fn::Concat': ['a', 'b'] },
      }),
    });
    expect(check(t)).toEqual([
      'Resources.Jobs.Properties.QueueName["Fn::Join"][1]: the string "not-a-list" where a list (of string) is expected',
      'Resources.Jobs.Properties.DelaySeconds["Fn::Length"]: Fn::Length needs Transform: AWS::LanguageExtensions',
      'Resources.Jobs.Properties.RedrivePolicy["Fn::ToJsonString"]: Fn::ToJsonString needs Transform: AWS::LanguageExtensions',
      'Resources.Jobs.Properties.KmsMasterKeyId["Fn::Concat"]: Fn::Concat is not a function CloudFormation accepts in a value',
    ]);
    expect(check({ ...t, Transform: 'AWS::LanguageExtensions' })).toEqual([
      'Resources.Jobs.Properties.QueueName["Fn::Join"][1]: the string "not-a-list" where a list (of string) is expected',
      'Resources.Jobs.Properties.KmsMasterKeyId["Fn::Concat"]: Fn::Concat is not a function CloudFormation accepts in a value',
    ]);
  });
});

describe('checkTemplate with the parameters of a call', () => {
  const t = template(
    {},
    {
      Parameters: {
        Subnets: { Type: 'List<AWS::EC2::Subnet::Id>' },
        Stage: { Type: 'String', Default: 'dev', AllowedValues: ['dev', 'prod'] },
        Topic: { Type: 'String', Default: '' },
      },
    },
  );

  it('accepts declared parameters with fitting values, as a list of the API or a map', () => {
    expect(check(t)).toEqual([]);
    const passed = [
      { ParameterKey: 'Subnets', ParameterValue: 'subnet-1,subnet-2' },
      { ParameterKey: 'Stage', UsePreviousValue: true },
    ];
    expect(checkTemplateWith(spec, t, { parameters: passed })).toEqual([]);
    expect(checkTemplateWith(spec, t, { parameters: { Subnets: 'subnet-1', Stage: 'prod' } })).toEqual([]);
  });

  it('finds a parameter the template does not declare, one missing, and values that do not fit', () => {
    expect(checkTemplateWith(spec, t, { parameters: { Stage: 'test', Vpc: 'vpc-1' } })).toEqual([
      'Parameters.Stage (passed): "test" is not one of AllowedValues (dev, prod)',
      'Parameters.Vpc: passed with the call but not declared in the template (CloudFormation refuses the call)',
      'Parameters.Subnets: no Default, and no value passed with the call',
    ]);
    expect(
      checkTemplateWith(spec, t, { parameters: [{ ParameterKey: 'Subnets', ParameterValue: '' }] }),
    ).toEqual(['Parameters.Subnets (passed): an empty value is no AWS::EC2::Subnet::Id']);
  });
});

describe('parameter helpers', () => {
  const t = {
    Parameters: { A: { Type: 'String' }, B: { Type: 'String', Default: '' }, C: { Type: 'Number' } },
    Resources: {},
  };
  it('lists the declared parameters, and those without a default', () => {
    expect(declaredParameters(t)).toEqual(['A', 'B', 'C']);
    expect(parametersWithoutDefault(t)).toEqual(['A', 'C']);
    expect(declaredParameters(JSON.stringify(t))).toEqual(['A', 'B', 'C']);
    expect(declaredParameters({ Resources: {} })).toEqual([]);
  });
});
