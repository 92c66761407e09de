// Serverless plugin: leaves in the packaged CloudFormation template only what CloudFormation decides,
// so that AWS's own linter (`cfn-lint`, run by `npm run test:deploy`) finds nothing to report.
//
// - Conditions decided at packaging: a condition whose operands are literals once serverless has
//   resolved the deploy parameters (`!Equals ["${param:tenantRegistryParameter}", ""]`) always
//   takes the same branch. Each `Fn::If` on one is replaced by the branch it takes, a branch that
//   is `AWS::NoValue` removes its list item or property, and the condition goes. Left in, cfn-lint
//   reports the condition (W8003) and checks the branch never taken as if it could be, e.g. a KMS
//   statement whose key ARN is empty because no key was given (E3510).
// - `DependsOn` entries the resource already has through a `Ref`, `Fn::GetAtt` or `Fn::Sub` of
//   the same resource (the framework adds the role and the integration): CloudFormation orders
//   them anyway (W3005).
//
// Conditions on deploy-time values (CloudFormation `Parameters`, e.g. `AlarmTopicArn`) are kept.

'use strict';

const NO_VALUE = Symbol('AWS::NoValue');

/** The value of condition `name` if its operands are all literals; undefined otherwise. */
function decide(conditions, name, decided, seen = new Set()) {
  if (decided.has(name)) return decided.get(name);
  if (seen.has(name) || !(name in conditions)) return undefined;
  seen.add(name);
  const value = evaluate(conditions, conditions[name], decided, seen);
  if (value !== undefined) decided.set(name, value);
  return value;
}

function evaluate(conditions, node, decided, seen) {
  if (!node || typeof node !== 'object' || Array.isArray(node)) return undefined;
  const [[fn, args]] = Object.entries(node);
  const all = (items) => items.map((item) => evaluate(conditions, item, decided, seen));
  switch (fn) {
    case 'Condition':
      return decide(conditions, args, decided, seen);
    case 'Fn::Equals':
      return args.every((arg) => typeof arg === 'string' || typeof arg === 'number')
        ? String(args[0]) === String(args[1])
        : undefined;
    case 'Fn::Not': {
      const [inner] = all(args);
      return inner === undefined ? undefined : !inner;
    }
    case 'Fn::And': {
      const values = all(args);
      if (values.includes(false)) return false;
      return values.includes(undefined) ? undefined : true;
    }
    case 'Fn::Or': {
      const values = all(args);
      if (values.includes(true)) return true;
      return values.includes(undefined) ? undefined : false;
    }
    default:
      return undefined;
  }
}

/** `node` with each `Fn::If` on a decided condition replaced by its branch; NO_VALUE where removed. */
function fold(node, decided) {
  if (Array.isArray(node)) {
    return node.map((item) => fold(item, decided)).filter((item) => item !== NO_VALUE);
  }
  if (!node || typeof node !== 'object') return node;
  const keys = Object.keys(node);
  if (keys.length === 1 && keys[0] === 'Fn::If' && decided.has(node['Fn::If'][0])) {
    const [name, then, otherwise] = node['Fn::If'];
    const branch = decided.get(name) ? then : otherwise;
    return branch?.Ref === 'AWS::NoValue' ? NO_VALUE : fold(branch, decided);
  }
  const out = {};
  for (const key of keys) {
    const value = fold(node[key], decided);
    if (value !== NO_VALUE) out[key] = value;
  }
  return out;
}

/** The logical ids `node` names through Ref, Fn::GetAtt and Fn::Sub. */
function referenced(node, into = new Set()) {
  if (Array.isArray(node)) {
    for (const item of node) referenced(item, into);
  } else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === 'Ref' && typeof value === 'string') into.add(value);
      else if (key === 'Fn::GetAtt') {
        into.add(Array.isArray(value) ? value[0] : String(value).split('.')[0]);
      } else if (key === 'Fn::Sub') {
        const text = Array.isArray(value) ? value[0] : value;
        for (const [, name] of String(text).matchAll(/\$\{([A-Za-z0-9]+)(\.[^}]*)?\}/g)) into.add(name);
        if (Array.isArray(value)) referenced(value[1], into);
      } else referenced(value, into);
    }
  }
  return into;
}

/** Tidies `template` in place (see the top of this file). */
function tidyTemplate(template) {
  const conditions = template.Conditions ?? {};
  const decided = new Map();
  for (const name of Object.keys(conditions)) decide(conditions, name, decided);
  if (decided.size > 0) {
    for (const section of ['Resources', 'Outputs']) {
      const entries = template[section] ?? {};
      for (const [id, entry] of Object.entries(entries)) {
        if (entry.Condition !== undefined && decided.has(entry.Condition)) {
          if (!decided.get(entry.Condition)) {
            delete entries[id];
            continue;
          }
          delete entry.Condition;
        }
        entries[id] = fold(entries[id], decided);
      }
    }
    // A condition still kept (it depends on a deploy-time value) may name a decided one: that one stays.
    const named = new Set();
    for (const [name, condition] of Object.entries(conditions)) {
      if (!decided.has(name))
        for (const [, inner] of JSON.stringify(condition).matchAll(/"Condition":"([^"]+)"/g))
          named.add(inner);
    }
    for (const name of decided.keys()) if (!named.has(name)) delete conditions[name];
    if (Object.keys(conditions).length === 0) delete template.Conditions;
  }
  for (const resource of Object.values(template.Resources ?? {})) {
    if (resource.DependsOn === undefined) continue;
    const through = referenced(resource.Properties);
    const kept = [resource.DependsOn].flat().filter((id) => !through.has(id));
    if (kept.length === 0) delete resource.DependsOn;
    else resource.DependsOn = kept;
  }
  return template;
}

class TemplateTidy {
  constructor(serverless) {
    this.serverless = serverless;
    this.hooks = {
      'before:aws:package:finalize:saveServiceState': () => {
        tidyTemplate(this.serverless.service.provider.compiledCloudFormationTemplate);
      },
    };
  }
}

module.exports = TemplateTidy;
module.exports.tidyTemplate = tidyTemplate;
