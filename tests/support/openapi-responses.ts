import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { XMLParser } from 'fast-xml-parser';

// ajv-formats is CommonJS: its default export arrives wrapped under Node's ESM loader.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as unknown as (ajv: Ajv2020) => void;

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;

interface HeaderObject {
  required?: boolean;
  $ref?: string;
}
interface ResponseObject {
  headers?: Record<string, HeaderObject>;
  content?: Record<string, { schema?: unknown }>;
  $ref?: string;
}
interface Operation {
  operationId: string;
  responses: Record<string, ResponseObject>;
}

interface WebhookOperation {
  parameters: { name: string; in: string; required?: boolean }[];
  requestBody: { content: Record<string, unknown> };
}

/** An HTTP answer as a client saw it. */
export interface ObservedResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly body: string;
}

const pointerOf = (ref: string) => ref.replace(/^#/, '');
const escapePointer = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');

type Schema = Record<string, unknown>;
const XML_MEDIA_TYPES = new Set(['application/xml', 'text/xml']);
// Every element a list, every value its text: the schema, not the parser, says what each one is.
const xmlParser = new XMLParser({
  ignoreAttributes: true,
  ignoreDeclaration: true,
  parseTagValue: false,
  trimValues: false,
  isArray: () => true,
});

/** A JSON pointer's target in `document`. */
function at(document: unknown, pointer: string): unknown {
  return pointer
    .split('/')
    .slice(1)
    .reduce<unknown>(
      (node, segment) => (node as Record<string, unknown>)?.[segment.replace(/~1/g, '/').replace(/~0/g, '~')],
      document,
    );
}

/**
 * An XML body as the data its schema describes, read through the schema's `xml` objects (OpenAPI
 * 3.1): an object's properties are child elements (named by `xml.name` or the property), an array
 * is its element repeated, a value is its element's text taken as the schema's type (an empty
 * element is null where null is allowed). What the schema does not name is kept as found, so that
 * validation reports it. Undefined when the root element is not the one the schema names.
 */
export function xmlAsData(document: unknown, schema: Schema, xml: string): { root: string; data: unknown } {
  const resolve = (node: Schema): Schema => {
    if (typeof node.$ref !== 'string') return node;
    const { $ref, ...siblings } = node;
    return { ...resolve(at(document, pointerOf($ref as string)) as Schema), ...siblings };
  };
  const types = (node: Schema): string[] => {
    if (Array.isArray(node.type)) return node.type as string[];
    if (typeof node.type === 'string') return [node.type];
    if (node.properties || node.patternProperties) return ['object'];
    return [];
  };
  const choose = (node: Schema, element: unknown): Schema => {
    const alternatives = (node.oneOf ?? node.anyOf) as Schema[] | undefined;
    if (!alternatives) return node;
    const { oneOf: _oneOf, anyOf: _anyOf, ...rest } = node;
    const fits = alternatives.find((alternative) => {
      const resolved = resolve(alternative);
      const target = types(resolved).includes('array') ? resolve(resolved.items as Schema) : resolved;
      const required = (target.required as string[] | undefined) ?? [];
      return typeof element === 'object' && element !== null && required.every((name) => name in element);
    });
    return { ...rest, ...resolve(fits ?? alternatives[0]!) };
  };
  const fromElements = (node: Schema, elements: unknown[]): unknown => {
    const schema = choose(resolve(node), elements[0]);
    if (types(schema).includes('array')) {
      const items = resolve((schema.items as Schema | undefined) ?? {});
      return elements.map((element) => fromElement(items, element));
    }
    return elements.length === 1
      ? fromElement(schema, elements[0])
      : elements.map((e) => fromElement(schema, e));
  };
  const fromElement = (node: Schema, element: unknown): unknown => {
    const schema = choose(resolve(node), element);
    const kinds = types(schema);
    if (typeof element === 'string') {
      if (kinds.includes('object')) return element.trim() === '' ? {} : element;
      if (element === '' && kinds.includes('null')) return null;
      const numeric =
        kinds.includes('integer') || kinds.includes('number') || typeof schema.const === 'number';
      if (numeric && /^-?\d+(\.\d+)?$/.test(element)) return Number(element);
      if (kinds.includes('boolean') && (element === 'true' || element === 'false')) return element === 'true';
      return element;
    }
    const properties = (schema.properties ?? {}) as Record<string, Schema>;
    const patterns = Object.entries((schema.patternProperties ?? {}) as Record<string, Schema>);
    const additional = schema.additionalProperties;
    const data: Record<string, unknown> = {};
    for (const [name, occurrences] of Object.entries(element as Record<string, unknown[]>)) {
      const property = Object.entries(properties).find(
        ([key, value]) => ((resolve(value).xml as { name?: string } | undefined)?.name ?? key) === name,
      );
      const pattern = patterns.find(([regex]) => new RegExp(regex, 'u').test(name));
      const child =
        property?.[1] ??
        pattern?.[1] ??
        (typeof additional === 'object' ? (additional as Schema) : undefined);
      data[property?.[0] ?? name] = child ? fromElements(child, occurrences) : occurrences;
    }
    return data;
  };
  const parsed = xmlParser.parse(xml) as Record<string, unknown[]>;
  const [root, elements] = Object.entries(parsed)[0] ?? ['', []];
  return { root, data: fromElements(schema, elements) };
}

/**
 * Checks answers against an OpenAPI 3.1 document: the status must be one the operation documents,
 * its required headers present, and a JSON body valid against the documented schema (ajv, JSON
 * Schema 2020-12, the dialect of OpenAPI 3.1). Remembers which operation/status pairs it saw.
 */
export function openApiResponseChecker(document: Record<string, unknown>) {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  addFormats(ajv);
  ajv.addSchema(document, 'openapi.json');
  const paths = document.paths as Record<string, Record<string, Operation>>;
  const routes = Object.entries(paths).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method]).map((method) => ({
      method: method.toUpperCase(),
      path,
      pattern: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`),
      operation: item[method]!,
    })),
  );
  const seen = new Set<string>();

  function resolve(response: ResponseObject, pointer: string): { response: ResponseObject; pointer: string } {
    if (!response.$ref) return { response, pointer };
    const target = pointerOf(response.$ref);
    return { response: at(document, target) as ResponseObject, pointer: target };
  }
  const header = (spec: HeaderObject): HeaderObject =>
    spec.$ref ? (at(document, pointerOf(spec.$ref)) as HeaderObject) : spec;

  return {
    /** What is wrong with `observed` as the answer to `method url`; empty when it conforms. */
    check(method: string, url: string, observed: ObservedResponse): string[] {
      const path = new URL(url).pathname;
      const route = routes.find((r) => r.method === method && r.pattern.test(path));
      if (!route) return [`${method} ${path} is not in the document`];
      const answer = `${route.operation.operationId} ${observed.status}`;
      const documented = route.operation.responses[String(observed.status)];
      if (!documented) return [`${answer}: status ${observed.status} is not documented`];
      seen.add(answer);
      const { response, pointer } = resolve(
        documented,
        `/paths/${escapePointer(route.path)}/${method.toLowerCase()}/responses/${observed.status}`,
      );
      const problems: string[] = [];
      for (const [name, spec] of Object.entries(response.headers ?? {})) {
        if (header(spec).required && !observed.headers.has(name))
          problems.push(`${answer}: header ${name} is missing`);
      }
      if (observed.body === '') return problems;
      const contentType = (observed.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
      const content = response.content ?? {};
      const media = content[contentType] ?? content[`${contentType.split('/')[0]}/*`] ?? content['*/*'];
      if (!media) return [...problems, `${answer}: content type "${contentType}" is not documented`];
      const textual = contentType === 'application/json' || XML_MEDIA_TYPES.has(contentType);
      // A JSON or XML answer documented as such has its schema; a file's bytes (`*/*`) have none.
      if (textual && content[contentType] && !media.schema)
        return [...problems, `${answer}: ${contentType} has no schema`];
      if (textual && media.schema) {
        const schemaPointer = `${pointer}/content/${escapePointer(contentType)}/schema`;
        const validate = ajv.getSchema(`openapi.json#${schemaPointer}`);
        if (!validate) return [...problems, `${answer}: no schema at ${schemaPointer}`];
        let data: unknown;
        if (contentType === 'application/json') data = JSON.parse(observed.body);
        else {
          const schema = media.schema as Schema;
          const read = xmlAsData(document, schema, observed.body);
          const resolved = schema.$ref ? (at(document, pointerOf(schema.$ref as string)) as Schema) : schema;
          const rootName = (resolved.xml as { name?: string } | undefined)?.name;
          if (read.root !== rootName)
            problems.push(`${answer}: root element <${read.root}>, not <${rootName}>`);
          data = read.data;
        }
        if (!validate(data)) {
          problems.push(
            `${answer}: body ${observed.body.slice(0, 200)} does not match: ${ajv.errorsText(validate.errors)}`,
          );
        }
      }
      return problems;
    },
    /**
     * What is wrong with a request the service sent as the webhook `name` of the document's
     * `webhooks`: its method, every required header (valid against its schema) and its body.
     */
    checkWebhook(
      name: string,
      request: {
        method: string;
        headers: Readonly<Record<string, string | string[] | undefined>>;
        body: string;
      },
    ): string[] {
      const item = (document.webhooks as Record<string, Record<string, WebhookOperation>> | undefined)?.[
        name
      ];
      const operation = item?.[request.method.toLowerCase()];
      if (!operation) return [`webhook ${request.method} ${name} is not in the document`];
      const problems: string[] = [];
      const base = `/webhooks/${escapePointer(name)}/${request.method.toLowerCase()}`;
      for (const [index, parameter] of operation.parameters.entries()) {
        if (parameter.in !== 'header') continue;
        const value = request.headers[parameter.name.toLowerCase()];
        if (value === undefined) {
          if (parameter.required) problems.push(`webhook ${name}: header ${parameter.name} is missing`);
          continue;
        }
        const validate = ajv.getSchema(`openapi.json#${base}/parameters/${index}/schema`);
        if (validate && !validate(value))
          problems.push(
            `webhook ${name}: header ${parameter.name} "${value}": ${ajv.errorsText(validate.errors)}`,
          );
      }
      const contentType = String(request.headers['content-type'] ?? '')
        .split(';')[0]!
        .trim()
        .toLowerCase();
      if (!operation.requestBody.content[contentType]) {
        problems.push(`webhook ${name}: content type "${contentType}" is not documented`);
      } else if (contentType === 'application/json') {
        const validate = ajv.getSchema(
          `openapi.json#${base}/requestBody/content/${escapePointer(contentType)}/schema`,
        );
        if (validate && !validate(JSON.parse(request.body)))
          problems.push(`webhook ${name}: body ${request.body}: ${ajv.errorsText(validate.errors)}`);
      }
      return problems;
    },
    /** Every documented `operationId status` pair. */
    documented(): string[] {
      return routes.flatMap((r) =>
        Object.keys(r.operation.responses).map((status) => `${r.operation.operationId} ${status}`),
      );
    },
    /** The `operationId status` pairs checked so far. */
    seen(): ReadonlySet<string> {
      return seen;
    },
  };
}
