// Serverless plugin: one CloudWatch alarm of each kind per function, added to the packaged
// template, so that an alarm kind is defined once (infra/resources/function-alarms.yml) and a new
// function gets its alarms without anyone writing them out again.
//
// The kinds come from `custom.functionAlarms` (serverless.yml), already resolved by serverless
// (`${param:…}`, `${self:service}`, `${sls:stage}`): each has `functions` (`all`, or `http` for the
// functions with an httpApi event) and `alarm`, the alarm's Properties, where `<function>` stands
// for the function's name in serverless.yml and `<FunctionResource>` for the logical id of its
// AWS::Lambda::Function (for `!Ref`). Kind `Errors` of function dataGetData becomes the resource
// `DataGetDataErrorsAlarm`.

'use strict';

const FUNCTION_NAME = '<function>';
const FUNCTION_RESOURCE = '<FunctionResource>';
const SELECTORS = ['all', 'http'];

/** `value` with the placeholders of every string replaced (a deep copy). */
function substitute(value, names) {
  if (typeof value === 'string') {
    return value.replaceAll(FUNCTION_NAME, names.function).replaceAll(FUNCTION_RESOURCE, names.resource);
  }
  if (Array.isArray(value)) return value.map((item) => substitute(item, names));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, substitute(inner, names)]));
  }
  return value;
}

/**
 * The alarm resources of `kinds` for `functions` ([{ name, normalizedName, resource, http }]), by
 * logical id. Throws on a kind it cannot expand: a wrong definition must stop the packaging, not
 * deploy a stack without its alarms.
 */
function functionAlarmResources(kinds, functions) {
  const resources = {};
  for (const [kind, definition] of Object.entries(kinds ?? {})) {
    if (!/^[A-Za-z0-9]+$/.test(kind))
      throw new Error(`alarm kind "${kind}": letters and digits only (a logical id)`);
    const { functions: selector, alarm } = definition ?? {};
    if (!SELECTORS.includes(selector)) {
      throw new Error(
        `alarm kind ${kind}: "functions" must be ${SELECTORS.join(' or ')}; got ${JSON.stringify(selector)}`,
      );
    }
    if (!alarm || typeof alarm !== 'object' || !JSON.stringify(alarm).includes(FUNCTION_RESOURCE)) {
      // Without the function's resource the "per-function" alarms would all watch the same thing.
      throw new Error(
        `alarm kind ${kind}: "alarm" must name the function's resource as ${FUNCTION_RESOURCE}`,
      );
    }
    for (const fn of functions) {
      if (selector === 'http' && !fn.http) continue;
      resources[`${fn.normalizedName}${kind}Alarm`] = {
        Type: 'AWS::CloudWatch::Alarm',
        Properties: substitute(alarm, { function: fn.name, resource: fn.resource }),
      };
    }
  }
  return resources;
}

class FunctionAlarms {
  constructor(serverless) {
    this.serverless = serverless;
    this.hooks = {
      // After the functions and their events are compiled, before `resources` are merged in and
      // the template is written: the alarms are checked and deployed with the rest.
      'before:package:finalize': () => this.addAlarms(),
    };
  }

  addAlarms() {
    const { service } = this.serverless;
    const naming = this.serverless.getProvider('aws').naming;
    const template = service.provider.compiledCloudFormationTemplate;
    const functions = service.getAllFunctions().map((name) => ({
      name,
      normalizedName: naming.getNormalizedFunctionName(name),
      resource: naming.getLambdaLogicalId(name),
      http: (service.getFunction(name).events ?? []).some((event) => event.httpApi),
    }));
    let resources;
    try {
      resources = functionAlarmResources(service.custom?.functionAlarms, functions);
    } catch (error) {
      throw new this.serverless.classes.Error(
        `custom.functionAlarms (infra/resources/function-alarms.yml): ${error.message}`,
        'INVALID_FUNCTION_ALARMS',
      );
    }
    for (const fn of functions) {
      if (!template.Resources[fn.resource]) {
        throw new this.serverless.classes.Error(
          `custom.functionAlarms: function ${fn.name} has no resource ${fn.resource} in the template`,
          'INVALID_FUNCTION_ALARMS',
        );
      }
    }
    const taken = Object.keys(resources).filter(
      (id) => template.Resources[id] || service.resources?.Resources?.[id],
    );
    if (taken.length > 0) {
      // An alarm written by hand as well would be silently replaced by one of the two.
      throw new this.serverless.classes.Error(
        `custom.functionAlarms: ${taken.join(', ')} already defined elsewhere`,
        'INVALID_FUNCTION_ALARMS',
      );
    }
    Object.assign(template.Resources, resources);
  }
}

module.exports = FunctionAlarms;
module.exports.functionAlarmResources = functionAlarmResources;
