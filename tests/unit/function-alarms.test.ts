import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

// The expansion of infra/deploy/function-alarms.cjs (a CommonJS serverless plugin). What it
// produces for this service's own definitions is checked on the packaged template
// (tests/unit/alarms-template.test.ts); here, what it does with definitions it cannot use.
interface FunctionEntry {
  name: string;
  normalizedName: string;
  resource: string;
  http: boolean;
}
const { functionAlarmResources } = createRequire(import.meta.url)(
  '../../infra/deploy/function-alarms.cjs',
) as {
  functionAlarmResources: (
    kinds: unknown,
    functions: FunctionEntry[],
  ) => Record<string, { Type: string; Properties: Record<string, unknown> }>;
};

const FUNCTIONS: FunctionEntry[] = [
  { name: 'dataGetData', normalizedName: 'DataGetData', resource: 'DataGetDataLambdaFunction', http: true },
  {
    name: 'webJobWorker',
    normalizedName: 'WebJobWorker',
    resource: 'WebJobWorkerLambdaFunction',
    http: false,
  },
];
const alarm = {
  AlarmName: 'svc-dev-<function>-errors',
  Dimensions: [{ Name: 'FunctionName', Value: { Ref: '<FunctionResource>' } }],
  Threshold: 0,
};

describe('Function: functionAlarmResources', () => {
  it('adds one alarm per function of the kind, named after the function, on its own resource', () => {
    expect(functionAlarmResources({ Errors: { functions: 'all', alarm } }, FUNCTIONS)).toEqual({
      DataGetDataErrorsAlarm: {
        Type: 'AWS::CloudWatch::Alarm',
        Properties: {
          AlarmName: 'svc-dev-dataGetData-errors',
          Dimensions: [{ Name: 'FunctionName', Value: { Ref: 'DataGetDataLambdaFunction' } }],
          Threshold: 0,
        },
      },
      WebJobWorkerErrorsAlarm: {
        Type: 'AWS::CloudWatch::Alarm',
        Properties: {
          AlarmName: 'svc-dev-webJobWorker-errors',
          Dimensions: [{ Name: 'FunctionName', Value: { Ref: 'WebJobWorkerLambdaFunction' } }],
          Threshold: 0,
        },
      },
    });
  });

  it('leaves out the functions without an HTTP route for a kind of HTTP functions', () => {
    expect(Object.keys(functionAlarmResources({ Rate: { functions: 'http', alarm } }, FUNCTIONS))).toEqual([
      'DataGetDataRateAlarm',
    ]);
  });

  it('does not change the definition it expands', () => {
    const kinds = { Errors: { functions: 'all', alarm: structuredClone(alarm) } };
    functionAlarmResources(kinds, FUNCTIONS);
    expect(kinds.Errors.alarm).toEqual(alarm);
  });

  it('refuses a definition it cannot expand, naming the kind', () => {
    expect(() => functionAlarmResources({ Errors: { functions: 'some', alarm } }, FUNCTIONS)).toThrow(
      /Errors: "functions" must be all or http/,
    );
    // Every function's alarm would watch the same thing.
    expect(() =>
      functionAlarmResources(
        { Errors: { functions: 'all', alarm: { AlarmName: 'x-<function>' } } },
        FUNCTIONS,
      ),
    ).toThrow(/Errors: "alarm" must name the function's resource as <FunctionResource>/);
    expect(() => functionAlarmResources({ 'Lambda-Errors': { functions: 'all', alarm } }, FUNCTIONS)).toThrow(
      /letters and digits only/,
    );
  });
});
