import { loadAwsServiceSpec } from '@aws-cdk/aws-service-spec';
import { parse as parseYaml } from 'yaml';

/**
 * A static check of a CloudFormation template against CloudFormation's own resource schemas, as
 * `@aws-cdk/aws-service-spec` ships them (`db.json.gz`: the registry schema of every resource type,
 * with the legacy specification's types kept as `previousTypes`). It finds what CloudFormation
 * would refuse before a deploy does: unknown types and properties, missing required ones, a list
 * or an object where a scalar goes (and the reverse), references to nothing (`Ref`, `Fn::GetAtt`,
 * `Fn::Sub`, `DependsOn`, conditions), unknown attributes, bad parameter declarations, circular
 * dependencies, and references to a resource that exists only under a condition.
 *
 * Everything about resource types comes from the database; only the template language itself
 * (sections, intrinsic functions, pseudo parameters, parameter types) is written out here.
 */

// The database's own shapes, as far as this checker reads them (@aws-cdk/service-spec-types).
interface SpecType {
  readonly type: string;
  readonly allowedValues?: readonly (string | number)[];
  readonly element?: SpecType;
  readonly types?: readonly SpecType[];
  readonly reference?: { readonly $ref: string };
}
interface SpecProperty {
  readonly type: SpecType;
  readonly previousTypes?: readonly SpecType[];
  readonly required?: boolean;
}
interface SpecResource {
  readonly cloudFormationType: string;
  readonly cloudFormationTransform?: string;
  readonly properties: Readonly<Record<string, SpecProperty>>;
  readonly attributes: Readonly<Record<string, { readonly type: SpecType }>>;
}
interface SpecTypeDefinition {
  readonly name: string;
  readonly properties: Readonly<Record<string, SpecProperty>>;
}

/** The loaded schemas: resource types by name, property types by id. */
export interface ResourceSpec {
  readonly resources: ReadonlyMap<string, SpecResource>;
  readonly typeDefinitions: ReadonlyMap<string, SpecTypeDefinition>;
}

let loading: Promise<ResourceSpec> | undefined;

/**
 * The schemas of `@aws-cdk/aws-service-spec`, loaded once per process (~0.5 s: 15 MB of JSON).
 * Indexed into plain maps so a check does not go through the database's query layer.
 */
export function loadResourceSpec(): Promise<ResourceSpec> {
  loading ??= loadAwsServiceSpec().then((db) => {
    const resources = new Map<string, SpecResource>();
    for (const resource of db.all('resource')) {
      resources.set(resource.cloudFormationType, resource as unknown as SpecResource);
    }
    const typeDefinitions = new Map<string, SpecTypeDefinition>();
    for (const definition of db.all('typeDefinition')) {
      typeDefinitions.set(definition.$id, definition as unknown as SpecTypeDefinition);
    }
    return { resources, typeDefinitions };
  });
  return loading;
}

/**
 * The `Parameters` of a CreateStack/UpdateStack/CreateChangeSet call, as the API takes them
 * (`[{ ParameterKey, ParameterValue, UsePreviousValue }]`), or as a map of name to value.
 */
export type CallParameters =
  | readonly {
      readonly ParameterKey?: string;
      readonly ParameterValue?: string;
      readonly UsePreviousValue?: boolean;
    }[]
  | Readonly<Record<string, string>>;

export interface CheckOptions {
  /**
   * The parameters the call passes with this template: each must be declared (CloudFormation
   * refuses "Parameters: [X] do not exist in the template"), each declared one without a `Default`
   * must be passed, and each value must fit its declaration. Left out: the template alone.
   */
  readonly parameters?: CallParameters;
}

/**
 * Every problem CloudFormation would find in `template` (a parsed template, or its body as JSON or
 * YAML text, as a CreateStack/CreateChangeSet call carries it), each as `path: what is wrong`;
 * empty when there is none.
 */
export async function checkTemplate(template: unknown, options: CheckOptions = {}): Promise<string[]> {
  return checkTemplateWith(await loadResourceSpec(), template, options);
}

/** `checkTemplate` with schemas already loaded (synchronous: a check itself takes milliseconds). */
export function checkTemplateWith(
  spec: ResourceSpec,
  template: unknown,
  options: CheckOptions = {},
): string[] {
  let parsed: unknown = template;
  if (typeof template === 'string') {
    try {
      parsed = parseTemplate(template);
    } catch (error) {
      return [`template: not JSON or YAML (${(error as Error).message})`];
    }
  }
  return new TemplateChecker(spec, parsed, options).run();
}

/** The logical names of the template's `Parameters`, in template order. */
export function declaredParameters(template: unknown): string[] {
  return Object.keys(section(asTemplate(template), 'Parameters'));
}

/** The parameters a stack cannot be created without: those with no `Default`. */
export function parametersWithoutDefault(template: unknown): string[] {
  return Object.entries(section(asTemplate(template), 'Parameters'))
    .filter(([, parameter]) => !isObject(parameter) || !('Default' in parameter))
    .map(([name]) => name);
}

/**
 * A template body as CloudFormation reads it: JSON, or YAML with the short forms of the intrinsic
 * functions (`!Ref X`, `!GetAtt A.B`, `!Sub ...`) turned into their long forms.
 */
export function parseTemplate(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return parseYaml(body, { customTags: YAML_TAGS as never });
  }
}

const YAML_TAGS = [
  ...[
    'Base64',
    'Cidr',
    'FindInMap',
    'GetAZs',
    'If',
    'ImportValue',
    'Join',
    'Select',
    'Split',
    'Sub',
    'And',
    'Equals',
    'Not',
    'Or',
    'ToJsonString',
    'Length',
    'Transform',
    'GetAtt',
  ].map((name) => `Fn::${name}`),
  'Ref',
  'Condition',
].flatMap((fn) =>
  (['scalar', 'seq', 'map'] as const).map((collection) => ({
    tag: `!${fn.replace('Fn::', '')}`,
    ...(collection === 'scalar' ? {} : { collection }),
    // `!GetAtt A.B` is the one short form whose long form is not just its value: a pair.
    resolve: (value: unknown) => {
      const plain = isObject(value) && typeof value.toJSON === 'function' ? value.toJSON() : value;
      if (fn === 'Fn::GetAtt' && typeof plain === 'string') {
        const dot = plain.indexOf('.');
        return { [fn]: dot < 0 ? plain : [plain.slice(0, dot), plain.slice(dot + 1)] };
      }
      return { [fn]: plain };
    },
  })),
);

// The template language: sections, pseudo parameters, parameter types, resource attributes.
const TOP_LEVEL = new Set([
  'AWSTemplateFormatVersion',
  'Description',
  'Metadata',
  'Parameters',
  'Rules',
  'Mappings',
  'Conditions',
  'Transform',
  'Resources',
  'Outputs',
]);
const RESOURCE_KEYS = new Set([
  'Type',
  'Properties',
  'DependsOn',
  'Condition',
  'Metadata',
  'DeletionPolicy',
  'UpdateReplacePolicy',
  'UpdatePolicy',
  'CreationPolicy',
]);
const DELETION_POLICIES = new Set(['Delete', 'Retain', 'RetainExceptOnCreate', 'Snapshot']);
const PARAMETER_KEYS = new Set([
  'Type',
  'Default',
  'Description',
  'AllowedPattern',
  'AllowedValues',
  'ConstraintDescription',
  'MaxLength',
  'MaxValue',
  'MinLength',
  'MinValue',
  'NoEcho',
]);
const OUTPUT_KEYS = new Set(['Value', 'Description', 'Export', 'Condition']);
const PSEUDO_PARAMETERS = new Set([
  'AWS::AccountId',
  'AWS::NotificationARNs',
  'AWS::NoValue',
  'AWS::Partition',
  'AWS::Region',
  'AWS::StackId',
  'AWS::StackName',
  'AWS::URLSuffix',
]);
// CloudFormation's AWS-specific parameter types (each also as List<…>, but the key pair name).
const AWS_PARAMETER_TYPES = [
  'AWS::EC2::AvailabilityZone::Name',
  'AWS::EC2::Image::Id',
  'AWS::EC2::Instance::Id',
  'AWS::EC2::KeyPair::KeyName',
  'AWS::EC2::SecurityGroup::GroupName',
  'AWS::EC2::SecurityGroup::Id',
  'AWS::EC2::Subnet::Id',
  'AWS::EC2::Volume::Id',
  'AWS::EC2::VPC::Id',
  'AWS::Route53::HostedZone::Id',
];
const LIST_AWS_PARAMETER_TYPES = AWS_PARAMETER_TYPES.filter((type) => !type.includes('KeyPair')).map(
  (type) => `List<${type}>`,
);
const PLAIN_PARAMETER_TYPES = ['String', 'Number', 'List<Number>', 'CommaDelimitedList'];
const PARAMETER_TYPES = new Set([
  ...PLAIN_PARAMETER_TYPES,
  ...AWS_PARAMETER_TYPES,
  ...LIST_AWS_PARAMETER_TYPES,
  'AWS::SSM::Parameter::Name',
  ...[
    'String',
    'List<String>',
    'CommaDelimitedList',
    ...AWS_PARAMETER_TYPES,
    ...LIST_AWS_PARAMETER_TYPES,
  ].map((type) => `AWS::SSM::Parameter::Value<${type}>`),
]);
const isListParameterType = (type: string) =>
  /^(AWS::SSM::Parameter::Value<)?(List<|CommaDelimitedList)/.test(type);

// Functions that need `Transform: AWS::LanguageExtensions`.
const LANGUAGE_EXTENSIONS = 'AWS::LanguageExtensions';
const CUSTOM_RESOURCE = 'AWS::CloudFormation::CustomResource';
// CloudFormation's quotas on one template.
const LIMITS = { Resources: 500, Parameters: 200, Outputs: 200, Mappings: 200 } as const;
const LOGICAL_ID = /^[A-Za-z0-9]{1,255}$/;

const STRING: SpecType = { type: 'string' };
const INTEGER: SpecType = { type: 'integer' };
const JSON_TYPE: SpecType = { type: 'json' };
const ANY_LIST: SpecType = { type: 'array', element: JSON_TYPE };
const STRING_LIST: SpecType = { type: 'array', element: STRING };
const SCALAR_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'date-time', 'json']);

/** What an intrinsic function gives: one value, a list, whatever (unknown here), or nothing. */
type Yield = 'scalar' | 'list' | 'any';

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function asTemplate(template: unknown): Json {
  const parsed = typeof template === 'string' ? parseTemplate(template) : template;
  return isObject(parsed) ? parsed : {};
}

function section(template: Json, name: string): Json {
  const value = template[name];
  return isObject(value) ? value : {};
}

/** `{ "Ref": … }` or `{ "Fn::X": … }`: the function's name and argument. */
function intrinsic(value: unknown): [string, unknown] | undefined {
  if (!isObject(value)) return undefined;
  const keys = Object.keys(value);
  if (keys.length !== 1) return undefined;
  const name = keys[0]!;
  return name === 'Ref' || name.startsWith('Fn::') ? [name, value[name]] : undefined;
}

function at(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

/** `${Name}` and `${Name.Attr}` of an `Fn::Sub` string, `${!Literal}` left out. */
function subVariables(text: string): string[] {
  return [...text.matchAll(/\$\{([^}]*)\}/g)]
    .map((match) => match[1]!)
    .filter((name) => !name.startsWith('!'));
}

function describeValue(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (isObject(value)) return 'an object';
  if (typeof value === 'string')
    return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  return `the ${typeof value} ${String(value)}`;
}

class TemplateChecker {
  private readonly problems: string[] = [];
  private readonly template: Json;
  private readonly resources: Json;
  private readonly parameters: Json;
  private readonly conditions: Json;
  private readonly mappings: Json;
  private readonly transforms: Set<string>;
  /** Resource → the resources it needs first (Ref, GetAtt, Sub, DependsOn). */
  private readonly dependencies = new Map<string, Set<string>>();
  /** Literal export names, each with the output that exports it first. */
  private readonly exportNames = new Map<string, string>();

  constructor(
    private readonly spec: ResourceSpec,
    template: unknown,
    private readonly options: CheckOptions,
  ) {
    this.template = isObject(template) ? template : {};
    if (!isObject(template))
      this.problems.push(`template: ${describeValue(template)} where an object is expected`);
    this.resources = section(this.template, 'Resources');
    this.parameters = section(this.template, 'Parameters');
    this.conditions = section(this.template, 'Conditions');
    this.mappings = section(this.template, 'Mappings');
    const transform = this.template.Transform;
    this.transforms = new Set(
      (Array.isArray(transform) ? transform : [transform]).filter((t): t is string => typeof t === 'string'),
    );
  }

  run(): string[] {
    if (this.problems.length > 0) return this.problems;
    this.checkSections();
    for (const [name, parameter] of Object.entries(this.parameters)) this.checkParameter(name, parameter);
    if (this.options.parameters) this.checkCallParameters(this.options.parameters);
    for (const [name, condition] of Object.entries(this.conditions)) {
      this.walkReferences(condition, `Conditions.${name}`, new Set(), undefined, 'Conditions');
    }
    for (const [name, resource] of Object.entries(this.resources)) this.checkResource(name, resource);
    for (const [name, output] of Object.entries(section(this.template, 'Outputs')))
      this.checkOutput(name, output);
    this.checkCycles();
    return this.problems;
  }

  private report(path: string, message: string): void {
    this.problems.push(`${path}: ${message}`);
  }

  private checkSections(): void {
    for (const key of Object.keys(this.template)) {
      if (!TOP_LEVEL.has(key)) this.report(key, 'not a section of a CloudFormation template');
    }
    const version = this.template.AWSTemplateFormatVersion;
    if (version !== undefined && version !== '2010-09-09') {
      this.report('AWSTemplateFormatVersion', `${describeValue(version)}: the only version is "2010-09-09"`);
    }
    if (Object.keys(this.resources).length === 0)
      this.report('Resources', 'a template needs at least one resource');
    for (const name of ['Resources', 'Parameters', 'Outputs', 'Conditions', 'Mappings'] as const) {
      const value = this.template[name];
      if (value !== undefined && !isObject(value))
        this.report(name, `${describeValue(value)} where an object is expected`);
    }
    for (const [name, limit] of Object.entries(LIMITS)) {
      const count = Object.keys(section(this.template, name)).length;
      if (count > limit) this.report(name, `${count} entries; CloudFormation allows at most ${limit}`);
    }
    for (const name of ['Resources', 'Parameters', 'Outputs', 'Mappings'] as const) {
      for (const id of Object.keys(section(this.template, name))) {
        if (!LOGICAL_ID.test(id)) this.report(at(name, id), 'a logical ID is 1 to 255 letters and digits');
      }
    }
    for (const id of Object.keys(this.parameters)) {
      if (id in this.resources) this.report(at('Parameters', id), 'a resource has the same logical ID');
    }
  }

  // ---- Parameters ----

  private checkParameter(name: string, parameter: unknown): void {
    const path = at('Parameters', name);
    if (!isObject(parameter)) {
      this.report(path, `${describeValue(parameter)} where an object is expected`);
      return;
    }
    for (const key of Object.keys(parameter)) {
      if (!PARAMETER_KEYS.has(key)) this.report(at(path, key), 'not an attribute of a parameter');
    }
    const type = parameter.Type;
    if (typeof type !== 'string') {
      this.report(at(path, 'Type'), 'required');
      return;
    }
    if (!PARAMETER_TYPES.has(type)) {
      this.report(at(path, 'Type'), `${JSON.stringify(type)} is not a parameter type`);
      return;
    }
    if (!('Default' in parameter)) return;
    const value = parameter.Default;
    if (typeof value !== 'string' && typeof value !== 'number') {
      this.report(at(path, 'Default'), `${describeValue(value)} where a string is expected`);
      return;
    }
    // The default of an SSM parameter type names a parameter of the store, not the value.
    if (type.startsWith('AWS::SSM::')) return;
    this.checkParameterValue(parameter, type, String(value), at(path, 'Default'));
  }

  /** A default or a passed value against its declaration (a list type's value element by element). */
  private checkParameterValue(parameter: Json, type: string, text: string, path: string): void {
    const values = isListParameterType(type) ? text.split(',') : [text];
    const numeric = type === 'Number' || type === 'List<Number>';
    for (const one of values) {
      // An AWS-specific type names something that exists in the account: never nothing.
      const problem =
        one.trim() === '' && type.includes('AWS::')
          ? `an empty value is no ${type.replace(/^List<(.*)>$/, '$1')}`
          : this.parameterValueProblem(parameter, one, numeric);
      if (problem) this.report(path, problem);
    }
  }

  private checkCallParameters(passed: CallParameters): void {
    const given = new Map<string, string | undefined>();
    if (Array.isArray(passed)) {
      for (const entry of passed as Extract<CallParameters, readonly unknown[]>) {
        if (entry.ParameterKey !== undefined) {
          given.set(entry.ParameterKey, entry.UsePreviousValue ? undefined : (entry.ParameterValue ?? ''));
        }
      }
    } else {
      for (const [key, value] of Object.entries(passed)) given.set(key, String(value));
    }
    for (const [key, value] of given) {
      const path = at('Parameters', key);
      const parameter = this.parameters[key];
      if (!isObject(parameter)) {
        this.report(
          path,
          'passed with the call but not declared in the template (CloudFormation refuses the call)',
        );
      } else if (
        value !== undefined &&
        typeof parameter.Type === 'string' &&
        !parameter.Type.startsWith('AWS::SSM::')
      ) {
        this.checkParameterValue(parameter, parameter.Type, value, `${path} (passed)`);
      }
    }
    for (const [key, parameter] of Object.entries(this.parameters)) {
      if (!given.has(key) && isObject(parameter) && !('Default' in parameter)) {
        this.report(at('Parameters', key), 'no Default, and no value passed with the call');
      }
    }
  }

  private parameterValueProblem(parameter: Json, value: string, numeric: boolean): string | undefined {
    const shown = JSON.stringify(value);
    if (numeric && (value.trim() === '' || !Number.isFinite(Number(value))))
      return `${shown} is not a number`;
    const allowed = parameter.AllowedValues;
    if (allowed !== undefined) {
      if (!Array.isArray(allowed)) return 'AllowedValues is not a list';
      if (!allowed.map(String).includes(value))
        return `${shown} is not one of AllowedValues (${allowed.join(', ')})`;
    }
    const pattern = parameter.AllowedPattern;
    if (typeof pattern === 'string') {
      let regex: RegExp;
      try {
        // CloudFormation matches the whole value.
        regex = new RegExp(`^(?:${pattern})$`, 'u');
      } catch {
        return `AllowedPattern ${JSON.stringify(pattern)} is not a regular expression`;
      }
      if (!regex.test(value)) return `${shown} does not match AllowedPattern ${JSON.stringify(pattern)}`;
    }
    const number = Number(value);
    if (numeric && typeof parameter.MinValue !== 'undefined' && number < Number(parameter.MinValue)) {
      return `${shown} is below MinValue ${String(parameter.MinValue)}`;
    }
    if (numeric && typeof parameter.MaxValue !== 'undefined' && number > Number(parameter.MaxValue)) {
      return `${shown} is above MaxValue ${String(parameter.MaxValue)}`;
    }
    if (
      !numeric &&
      typeof parameter.MinLength !== 'undefined' &&
      value.length < Number(parameter.MinLength)
    ) {
      return `${shown} is shorter than MinLength ${String(parameter.MinLength)}`;
    }
    if (
      !numeric &&
      typeof parameter.MaxLength !== 'undefined' &&
      value.length > Number(parameter.MaxLength)
    ) {
      return `${shown} is longer than MaxLength ${String(parameter.MaxLength)}`;
    }
    return undefined;
  }

  // ---- Resources ----

  private checkResource(name: string, resource: unknown): void {
    const path = at('Resources', name);
    this.dependencies.set(name, new Set());
    if (!isObject(resource)) {
      this.report(path, `${describeValue(resource)} where an object is expected`);
      return;
    }
    for (const key of Object.keys(resource)) {
      if (!RESOURCE_KEYS.has(key)) this.report(at(path, key), 'not an attribute of a resource');
    }
    const scope = new Set<string>();
    const condition = resource.Condition;
    if (condition !== undefined) {
      if (typeof condition !== 'string') this.report(at(path, 'Condition'), 'a condition name is expected');
      else if (!(condition in this.conditions))
        this.report(at(path, 'Condition'), `no condition ${condition} in Conditions`);
      else scope.add(condition);
    }
    this.checkDependsOn(name, resource.DependsOn, at(path, 'DependsOn'), scope);
    for (const key of ['DeletionPolicy', 'UpdateReplacePolicy'] as const) {
      const policy = resource[key];
      if (policy !== undefined && !(typeof policy === 'string' && DELETION_POLICIES.has(policy))) {
        this.report(
          at(path, key),
          `${describeValue(policy)} is not one of ${[...DELETION_POLICIES].join(', ')}`,
        );
      }
    }
    const properties = resource.Properties ?? {};
    this.walkReferences(properties, at(path, 'Properties'), scope, name, 'Resources');
    for (const key of ['Metadata', 'UpdatePolicy', 'CreationPolicy'] as const) {
      if (resource[key] !== undefined)
        this.walkReferences(resource[key], at(path, key), scope, undefined, 'Resources');
    }

    const type = resource.Type;
    if (typeof type !== 'string') {
      this.report(at(path, 'Type'), 'required');
      return;
    }
    if (type.startsWith('Custom::') || type === CUSTOM_RESOURCE) {
      // A custom resource takes any property; CloudFormation itself needs only the token.
      if (!isObject(properties)) {
        this.report(at(path, 'Properties'), `${describeValue(properties)} where an object is expected`);
        return;
      }
      if (!('ServiceToken' in properties))
        this.report(at(at(path, 'Properties'), 'ServiceToken'), 'required property missing');
      else
        this.problems.push(
          ...this.check(properties.ServiceToken, [STRING], at(at(path, 'Properties'), 'ServiceToken')),
        );
      return;
    }
    const spec = this.spec.resources.get(type);
    if (!spec) {
      this.report(at(path, 'Type'), `${JSON.stringify(type)} is not a CloudFormation resource type`);
      return;
    }
    if (spec.cloudFormationTransform && !this.transforms.has(spec.cloudFormationTransform)) {
      this.report(at(path, 'Type'), `${type} needs Transform: ${spec.cloudFormationTransform}`);
    }
    this.problems.push(...this.checkObject(properties, spec.properties, at(path, 'Properties'), type));
  }

  private checkDependsOn(name: string, dependsOn: unknown, path: string, scope: ReadonlySet<string>): void {
    if (dependsOn === undefined) return;
    const targets = Array.isArray(dependsOn) ? dependsOn : [dependsOn];
    targets.forEach((target, i) => {
      const where = Array.isArray(dependsOn) ? at(path, i) : path;
      if (typeof target !== 'string') {
        this.report(where, `${describeValue(target)} where a resource name is expected`);
        return;
      }
      if (!(target in this.resources)) {
        this.report(where, `no resource ${target}`);
        return;
      }
      if (target === name) {
        this.report(where, 'a resource cannot depend on itself');
        return;
      }
      this.dependencies.get(name)?.add(target);
      this.checkConditional(target, where, scope);
    });
  }

  // ---- Outputs ----

  private checkOutput(name: string, output: unknown): void {
    const path = at('Outputs', name);
    if (!isObject(output)) {
      this.report(path, `${describeValue(output)} where an object is expected`);
      return;
    }
    for (const key of Object.keys(output)) {
      if (!OUTPUT_KEYS.has(key)) this.report(at(path, key), 'not an attribute of an output');
    }
    const scope = new Set<string>();
    const condition = output.Condition;
    if (condition !== undefined) {
      if (typeof condition !== 'string' || !(condition in this.conditions)) {
        this.report(at(path, 'Condition'), `no condition ${String(condition)} in Conditions`);
      } else scope.add(condition);
    }
    if (!('Value' in output)) this.report(at(path, 'Value'), 'required');
    else {
      this.walkReferences(output.Value, at(path, 'Value'), scope, undefined, 'Outputs');
      // An output is one string: a list has to be joined first.
      this.problems.push(...this.check(output.Value, [STRING], at(path, 'Value')));
    }
    if (output.Export !== undefined) {
      const exportPath = at(path, 'Export');
      this.walkReferences(output.Export, exportPath, scope, undefined, 'Outputs');
      if (!isObject(output.Export) || !('Name' in output.Export)) {
        this.report(at(exportPath, 'Name'), 'required');
        return;
      }
      const exportName = output.Export.Name;
      this.problems.push(...this.check(exportName, [STRING], at(exportPath, 'Name')));
      // Export names are unique in a region; two in one template can never both be created.
      if (typeof exportName === 'string') {
        const first = this.exportNames.get(exportName);
        if (first)
          this.report(at(exportPath, 'Name'), `${JSON.stringify(exportName)} is exported by ${first} too`);
        else this.exportNames.set(exportName, at('Outputs', name));
      }
    }
  }

  // ---- References: Ref, Fn::GetAtt, Fn::Sub, Fn::If, conditions ----

  /**
   * Checks every reference in `value`. `scope`: the conditions known to hold there (the resource's
   * or output's own, and those of the `Fn::If` branches around); `from`: the resource whose
   * dependencies these are; `area`: the section, as Conditions may refer only to parameters.
   */
  private walkReferences(
    value: unknown,
    path: string,
    scope: ReadonlySet<string>,
    from: string | undefined,
    area: 'Resources' | 'Outputs' | 'Conditions',
  ): void {
    if (Array.isArray(value)) {
      for (const [i, item] of value.entries()) this.walkReferences(item, at(path, i), scope, from, area);
      return;
    }
    if (!isObject(value)) return;
    const fn =
      intrinsic(value) ??
      (area === 'Conditions' && Object.keys(value).length === 1 && 'Condition' in value
        ? (['Condition', value.Condition] as [string, unknown])
        : undefined);
    if (!fn) {
      for (const [key, item] of Object.entries(value))
        this.walkReferences(item, at(path, key), scope, from, area);
      return;
    }
    const [name, arg] = fn;
    const argPath = at(path, name);
    switch (name) {
      case 'Ref':
        if (typeof arg !== 'string') {
          this.report(argPath, 'Ref takes a logical name');
          return;
        }
        this.checkTarget(arg, undefined, argPath, scope, from, area);
        return;
      case 'Fn::GetAtt': {
        const parts = typeof arg === 'string' ? splitAttribute(arg) : arg;
        if (!Array.isArray(parts) || parts.length !== 2 || typeof parts[0] !== 'string') {
          this.report(argPath, 'Fn::GetAtt takes [resource, attribute]');
          return;
        }
        if (typeof parts[1] !== 'string') {
          // An attribute name computed by a function: only the resource can be checked.
          this.walkReferences(parts[1], at(argPath, 1), scope, from, area);
          this.checkTarget(parts[0], '', argPath, scope, from, area);
          return;
        }
        this.checkTarget(parts[0], parts[1], argPath, scope, from, area);
        return;
      }
      case 'Fn::Sub': {
        const [text, variables] = Array.isArray(arg) ? [arg[0], arg[1]] : [arg, undefined];
        if (typeof text !== 'string' || (variables !== undefined && !isObject(variables))) {
          this.report(argPath, 'Fn::Sub takes a string, or [string, {variables}]');
          return;
        }
        if (isObject(variables)) this.walkReferences(variables, at(argPath, 1), scope, from, area);
        for (const variable of subVariables(text)) {
          if (isObject(variables) && variable in variables) continue;
          const dot = variable.indexOf('.');
          const where = `${argPath} \${${variable}}`;
          if (dot < 0) this.checkTarget(variable, undefined, where, scope, from, area);
          else this.checkTarget(variable.slice(0, dot), variable.slice(dot + 1), where, scope, from, area);
        }
        return;
      }
      case 'Fn::If': {
        if (!Array.isArray(arg) || arg.length !== 3 || typeof arg[0] !== 'string') {
          this.report(argPath, 'Fn::If takes [condition, value if true, value if false]');
          return;
        }
        const condition = arg[0];
        if (!(condition in this.conditions))
          this.report(at(argPath, 0), `no condition ${condition} in Conditions`);
        this.walkReferences(arg[1], at(argPath, 1), new Set([...scope, condition]), from, area);
        this.walkReferences(arg[2], at(argPath, 2), scope, from, area);
        return;
      }
      case 'Condition':
        if (typeof arg !== 'string' || !(arg in this.conditions)) {
          this.report(argPath, `no condition ${String(arg)} in Conditions`);
        }
        return;
      case 'Fn::FindInMap':
        if (Array.isArray(arg) && typeof arg[0] === 'string') {
          const map = this.mappings[arg[0]];
          if (!isObject(map)) this.report(at(argPath, 0), `no mapping ${arg[0]} in Mappings`);
          else if (typeof arg[1] === 'string' && !(arg[1] in map) && arg.length < 4) {
            this.report(at(argPath, 1), `no key ${arg[1]} in mapping ${arg[0]}`);
          }
        }
        this.walkReferences(arg, argPath, scope, from, area);
        return;
      default:
        this.walkReferences(arg, argPath, scope, from, area);
    }
  }

  /** `Ref` (attribute undefined) or `Fn::GetAtt` (attribute '' when computed) of `target`. */
  private checkTarget(
    target: string,
    attribute: string | undefined,
    path: string,
    scope: ReadonlySet<string>,
    from: string | undefined,
    area: 'Resources' | 'Outputs' | 'Conditions',
  ): void {
    if (attribute === undefined && (PSEUDO_PARAMETERS.has(target) || target in this.parameters)) return;
    const resource = this.resources[target];
    if (resource === undefined) {
      this.report(
        path,
        attribute === undefined
          ? `${target} is not a resource, a parameter or a pseudo parameter`
          : `${target} is not a resource`,
      );
      return;
    }
    if (area === 'Conditions') {
      this.report(path, `conditions can refer only to parameters, not to the resource ${target}`);
      return;
    }
    if (from === target) {
      this.report(path, `${target} refers to itself`);
      return;
    }
    if (from !== undefined) this.dependencies.get(from)?.add(target);
    this.checkConditional(target, path, scope);
    if (attribute) {
      const type = isObject(resource) ? resource.Type : undefined;
      if (typeof type === 'string' && !this.hasAttribute(type, attribute)) {
        this.report(path, `${type} has no attribute ${attribute}`);
      }
    }
  }

  /** A resource that exists only under a condition may be named only where that condition holds. */
  private checkConditional(target: string, path: string, scope: ReadonlySet<string>): void {
    const resource = this.resources[target];
    const condition = isObject(resource) ? resource.Condition : undefined;
    if (typeof condition === 'string' && !scope.has(condition)) {
      this.report(
        path,
        `${target} exists only when ${condition} holds: name it under the same Condition or in Fn::If [${condition}, …]`,
      );
    }
  }

  private hasAttribute(type: string, attribute: string): boolean {
    if (type.startsWith('Custom::') || type === CUSTOM_RESOURCE) return true;
    const spec = this.spec.resources.get(type);
    if (!spec) return true; // the unknown type is reported already
    if (attribute in spec.attributes) return true;
    // A nested stack's outputs: `Outputs.Name` (the schema lists Outputs as its CC-API list).
    if (type === 'AWS::CloudFormation::Stack' && attribute.startsWith('Outputs.')) return true;
    // An attribute whose value is a map or JSON has its keys as attributes.
    const dot = attribute.indexOf('.');
    const parent = dot > 0 ? spec.attributes[attribute.slice(0, dot)] : undefined;
    return parent !== undefined && (parent.type.type === 'map' || parent.type.type === 'json');
  }

  private attributeYield(target: string, attribute: unknown): Yield {
    const resource = this.resources[target];
    const type = isObject(resource) ? resource.Type : undefined;
    if (typeof type !== 'string' || typeof attribute !== 'string') return 'any';
    const found = this.spec.resources.get(type)?.attributes[attribute];
    if (!found) return 'any';
    if (found.type.type === 'array') return 'list';
    return SCALAR_TYPES.has(found.type.type) && found.type.type !== 'json' ? 'scalar' : 'any';
  }

  /** Cycles of Ref/GetAtt/Sub/DependsOn between resources: CloudFormation refuses the template. */
  private checkCycles(): void {
    const state = new Map<string, 'open' | 'done'>();
    const stack: string[] = [];
    const visit = (name: string): void => {
      state.set(name, 'open');
      stack.push(name);
      for (const next of this.dependencies.get(name) ?? []) {
        if (state.get(next) === 'open') {
          const cycle = [...stack.slice(stack.indexOf(next)), next];
          this.report(at('Resources', next), `circular dependency ${cycle.join(' → ')}`);
        } else if (!state.has(next)) visit(next);
      }
      stack.pop();
      state.set(name, 'done');
    };
    for (const name of this.dependencies.keys()) if (!state.has(name)) visit(name);
  }

  // ---- Values against the schema's types ----

  /** The problems of `value` as one of `types` (the first that fits; else the closest's). */
  private check(value: unknown, types: readonly SpecType[], path: string): string[] {
    const alternatives = flatten(types);
    if (value === null || value === undefined) {
      return [`${path}: null; CloudFormation does not accept null values`];
    }
    const fn = intrinsic(value);
    if (fn) return this.checkIntrinsic(fn[0], fn[1], alternatives, path);
    if (alternatives.some((type) => type.type === 'json')) return this.checkJson(value, path);

    let fitting: SpecType[];
    if (Array.isArray(value)) fitting = alternatives.filter((type) => type.type === 'array');
    else if (isObject(value))
      fitting = alternatives.filter((type) => ['ref', 'map', 'tag'].includes(type.type));
    else fitting = alternatives.filter((type) => this.scalarFits(value, type));
    if (fitting.length === 0) {
      return [
        `${path}: ${describeValue(value)} where ${alternatives.map((t) => this.describeType(t)).join(' or ')} is expected`,
      ];
    }
    let best: string[] | undefined;
    for (const type of fitting) {
      const problems = this.checkAs(value, type, path);
      if (problems.length === 0) return problems;
      if (!best || problems.length < best.length) best = problems;
    }
    return best ?? [];
  }

  private scalarFits(value: unknown, type: SpecType): boolean {
    // CloudFormation converts scalars: a number or boolean where a string goes, and a string that
    // reads as a number or a boolean where one of those goes.
    switch (type.type) {
      case 'string':
      case 'date-time':
        return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
      case 'number':
        return (
          typeof value === 'number' ||
          (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)))
        );
      case 'integer':
        return Number.isInteger(typeof value === 'string' && value.trim() !== '' ? Number(value) : value);
      case 'boolean':
        return typeof value === 'boolean' || (typeof value === 'string' && /^(true|false)$/i.test(value));
      default:
        return false;
    }
  }

  private checkAs(value: unknown, type: SpecType, path: string): string[] {
    switch (type.type) {
      case 'array':
        return (value as unknown[]).flatMap((item, i) =>
          this.check(item, [type.element ?? JSON_TYPE], at(path, i)),
        );
      case 'map':
        return Object.entries(value as Json).flatMap(([key, item]) =>
          this.check(item, [type.element ?? JSON_TYPE], at(path, key)),
        );
      case 'tag':
        return this.checkObject(
          value,
          { Key: { type: STRING, required: true }, Value: { type: STRING, required: true } },
          path,
          'Tag',
        );
      case 'ref': {
        const definition = type.reference && this.spec.typeDefinitions.get(type.reference.$ref);
        return definition ? this.checkObject(value, definition.properties, path, definition.name) : [];
      }
      default: {
        const allowed = type.allowedValues;
        if (allowed && !allowed.map(String).includes(String(value))) {
          return [`${path}: ${describeValue(value)} is not one of ${allowed.join(', ')}`];
        }
        return [];
      }
    }
  }

  /** An object of a schema's properties: unknown ones, missing required ones, each one's type. */
  private checkObject(
    value: unknown,
    properties: Readonly<Record<string, SpecProperty>>,
    path: string,
    typeName: string,
  ): string[] {
    const fn = intrinsic(value);
    if (fn) return this.checkIntrinsic(fn[0], fn[1], [{ type: 'map', element: JSON_TYPE }], path);
    if (!isObject(value))
      return [`${path}: ${describeValue(value)} where an object (${typeName}) is expected`];
    const problems: string[] = [];
    for (const [key, item] of Object.entries(value)) {
      const property = properties[key];
      if (!property) problems.push(`${at(path, key)}: unknown property (${typeName} has no ${key})`);
      else
        problems.push(...this.check(item, [property.type, ...(property.previousTypes ?? [])], at(path, key)));
    }
    for (const [key, property] of Object.entries(properties)) {
      if (property.required && !(key in value)) problems.push(`${at(path, key)}: required property missing`);
    }
    return problems;
  }

  /** JSON (a policy document, …): any shape, but the functions inside must still be well formed. */
  private checkJson(value: unknown, path: string): string[] {
    if (value === null) return [`${path}: null; CloudFormation does not accept null values`];
    const fn = intrinsic(value);
    if (fn) return this.checkIntrinsic(fn[0], fn[1], [JSON_TYPE], path);
    if (Array.isArray(value)) return value.flatMap((item, i) => this.checkJson(item, at(path, i)));
    if (isObject(value))
      return Object.entries(value).flatMap(([key, item]) => this.checkJson(item, at(path, key)));
    return [];
  }

  /** An intrinsic function where a value of `types` goes: its arguments, and what it gives. */
  private checkIntrinsic(name: string, arg: unknown, types: readonly SpecType[], path: string): string[] {
    const argPath = at(path, name);
    const shape = (message: string) => [`${argPath}: ${message}`];
    const needsExtensions = () =>
      this.transforms.has(LANGUAGE_EXTENSIONS)
        ? []
        : shape(`${name} needs Transform: ${LANGUAGE_EXTENSIONS}`);
    let gives: Yield;
    const problems: string[] = [];
    switch (name) {
      case 'Ref':
        if (arg === 'AWS::NoValue') return [];
        if (arg === 'AWS::NotificationARNs') gives = 'list';
        else if (typeof arg === 'string' && isObject(this.parameters[arg])) {
          const type = (this.parameters[arg] as Json).Type;
          gives = typeof type === 'string' && isListParameterType(type) ? 'list' : 'scalar';
        } else gives = 'scalar';
        break;
      case 'Fn::GetAtt': {
        const parts = typeof arg === 'string' ? splitAttribute(arg) : arg;
        gives =
          Array.isArray(parts) && typeof parts[0] === 'string'
            ? this.attributeYield(parts[0], parts[1])
            : 'any';
        break;
      }
      case 'Fn::If':
        if (!Array.isArray(arg) || arg.length !== 3) return []; // reported with the references
        // Each branch must fit where the function stands.
        return [...this.check(arg[1], types, at(argPath, 1)), ...this.check(arg[2], types, at(argPath, 2))];
      case 'Fn::Sub':
        if (Array.isArray(arg) && isObject(arg[1])) {
          for (const [key, item] of Object.entries(arg[1]))
            problems.push(...this.check(item, [STRING], at(at(argPath, 1), key)));
        }
        gives = 'scalar';
        break;
      case 'Fn::Join':
        if (!Array.isArray(arg) || arg.length !== 2 || typeof arg[0] !== 'string')
          return shape('Fn::Join takes [delimiter, [values]]');
        problems.push(...this.check(arg[1], [STRING_LIST], at(argPath, 1)));
        gives = 'scalar';
        break;
      case 'Fn::Split':
        if (!Array.isArray(arg) || arg.length !== 2 || typeof arg[0] !== 'string')
          return shape('Fn::Split takes [delimiter, string]');
        problems.push(...this.check(arg[1], [STRING], at(argPath, 1)));
        gives = 'list';
        break;
      case 'Fn::Select':
        if (!Array.isArray(arg) || arg.length !== 2) return shape('Fn::Select takes [index, list]');
        problems.push(
          ...this.check(arg[0], [INTEGER], at(argPath, 0)),
          ...this.check(arg[1], [ANY_LIST], at(argPath, 1)),
        );
        gives = 'any';
        break;
      case 'Fn::Base64':
      case 'Fn::ImportValue':
        problems.push(...this.check(arg, [STRING], argPath));
        gives = 'scalar';
        break;
      case 'Fn::GetAZs':
        problems.push(...this.check(arg, [STRING], argPath));
        gives = 'list';
        break;
      case 'Fn::Cidr':
        if (!Array.isArray(arg) || arg.length !== 3)
          return shape('Fn::Cidr takes [ip block, count, cidr bits]');
        problems.push(
          ...arg.flatMap((item, i) => this.check(item, [i === 0 ? STRING : INTEGER], at(argPath, i))),
        );
        gives = 'list';
        break;
      case 'Fn::FindInMap':
        if (!Array.isArray(arg) || arg.length < 3 || arg.length > 4)
          return shape('Fn::FindInMap takes [map, top key, second key]');
        if (arg.length === 4) problems.push(...needsExtensions());
        problems.push(...arg.slice(0, 3).flatMap((item, i) => this.check(item, [STRING], at(argPath, i))));
        gives = 'any';
        break;
      case 'Fn::ToJsonString':
        problems.push(...needsExtensions());
        if (!Array.isArray(arg) && !isObject(arg))
          problems.push(...shape('Fn::ToJsonString takes an object or a list'));
        else problems.push(...this.checkJson(arg, argPath));
        gives = 'scalar';
        break;
      case 'Fn::Length':
        problems.push(...needsExtensions(), ...this.check(arg, [ANY_LIST], argPath));
        gives = 'scalar';
        break;
      case 'Fn::Transform':
        // A macro: what it gives is known only once it has run.
        return [];
      default:
        return shape(`${name} is not a function CloudFormation accepts in a value`);
    }
    const fits =
      gives === 'any' ||
      types.some((type) => type.type === 'json') ||
      (gives === 'scalar'
        ? types.some((type) => SCALAR_TYPES.has(type.type))
        : types.some((type) => type.type === 'array'));
    if (!fits) {
      problems.push(
        `${path}: ${name} gives ${gives === 'list' ? 'a list' : 'a single value'} where ${types.map((t) => this.describeType(t)).join(' or ')} is expected`,
      );
    }
    return problems;
  }

  private describeType(type: SpecType): string {
    switch (type.type) {
      case 'array':
        return `a list (of ${this.describeType(type.element ?? JSON_TYPE).replace(/^an? /, '')})`;
      case 'map':
        return 'a map';
      case 'tag':
        return 'a tag {Key, Value}';
      case 'ref':
        return `an object (${(type.reference && this.spec.typeDefinitions.get(type.reference.$ref)?.name) ?? 'property type'})`;
      case 'json':
        return 'JSON';
      case 'integer':
        return 'an integer';
      default:
        return `a ${type.type}`;
    }
  }
}

/** Unions taken apart, so each member is one alternative. */
function flatten(types: readonly SpecType[]): SpecType[] {
  return types.flatMap((type) => (type.type === 'union' ? flatten(type.types ?? []) : [type]));
}

/** `A.B.C` of the string form of Fn::GetAtt: the resource A, the attribute B.C. */
function splitAttribute(text: string): [string, string] | string[] {
  const dot = text.indexOf('.');
  return dot < 0 ? [text] : [text.slice(0, dot), text.slice(dot + 1)];
}
