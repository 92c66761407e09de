import { isMap, isPair, isScalar, parseDocument, visit } from 'yaml';

/** JSON Schema 2020-12's keywords (core, applicator, unevaluated, validation, format, content, meta-data). */
const JSON_SCHEMA_KEYWORDS = [
  '$schema',
  '$id',
  '$ref',
  '$anchor',
  '$dynamicRef',
  '$dynamicAnchor',
  '$vocabulary',
  '$comment',
  '$defs',
  'allOf',
  'anyOf',
  'oneOf',
  'not',
  'if',
  'then',
  'else',
  'dependentSchemas',
  'prefixItems',
  'items',
  'contains',
  'properties',
  'patternProperties',
  'additionalProperties',
  'propertyNames',
  'unevaluatedItems',
  'unevaluatedProperties',
  'type',
  'const',
  'enum',
  'multipleOf',
  'maximum',
  'exclusiveMaximum',
  'minimum',
  'exclusiveMinimum',
  'maxLength',
  'minLength',
  'pattern',
  'maxItems',
  'minItems',
  'uniqueItems',
  'maxContains',
  'minContains',
  'maxProperties',
  'minProperties',
  'required',
  'dependentRequired',
  'format',
  'contentEncoding',
  'contentMediaType',
  'contentSchema',
  'title',
  'description',
  'default',
  'deprecated',
  'readOnly',
  'writeOnly',
  'examples',
];
/** What OpenAPI 3.1 adds to a Schema Object, and the fields of its XML Object. */
const SCHEMA_KEYWORDS = new Set([...JSON_SCHEMA_KEYWORDS, 'discriminator', 'xml', 'externalDocs', 'example']);
const XML_FIELDS = new Set(['name', 'namespace', 'prefix', 'attribute', 'wrapped']);

const SUBSCHEMA = [
  'items',
  'additionalProperties',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
  'unevaluatedItems',
  'unevaluatedProperties',
  'contentSchema',
];
const SUBSCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];
const SUBSCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'dependentSchemas'];

type Node = Record<string, unknown>;
const isObject = (value: unknown): value is Node =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Keys of Schema Objects (and their XML Objects) that neither JSON Schema 2020-12 nor OpenAPI 3.1
 * defines, as JSON pointers. The OpenAPI 3.1 meta-schema lets a schema carry any key (JSON Schema
 * ignores unknown ones), so a description cut at its comma in a YAML flow mapping
 * (`{ description: a, b }` gives a key `b`) passes validation; this finds it.
 */
export function unknownSchemaKeys(document: Node): string[] {
  const found: string[] = [];
  function schema(node: unknown, at: string): void {
    if (typeof node === 'boolean') return;
    if (!isObject(node)) {
      found.push(`${at} is not a schema`);
      return;
    }
    for (const [key, value] of Object.entries(node)) {
      if (!SCHEMA_KEYWORDS.has(key) && !key.startsWith('x-')) found.push(`${at}/${key}`);
      if (SUBSCHEMA.includes(key)) schema(value, `${at}/${key}`);
      if (SUBSCHEMA_LISTS.includes(key) && Array.isArray(value))
        for (const [index, item] of value.entries()) schema(item, `${at}/${key}/${index}`);
      if (SUBSCHEMA_MAPS.includes(key) && isObject(value))
        for (const [name, item] of Object.entries(value)) schema(item, `${at}/${key}/${name}`);
      if (key === 'xml' && isObject(value))
        for (const field of Object.keys(value))
          if (!XML_FIELDS.has(field) && !field.startsWith('x-')) found.push(`${at}/xml/${field}`);
    }
  }
  // Everything outside schemas: a `schema` field holds one; examples are data, not the document's own.
  function outside(node: unknown, at: string): void {
    if (Array.isArray(node)) for (const [index, item] of node.entries()) outside(item, `${at}/${index}`);
    if (!isObject(node)) return;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'example' || key === 'examples') continue;
      if (key === 'schema') schema(value, `${at}/schema`);
      else if (key === 'schemas' && at === '/components' && isObject(value))
        for (const [name, item] of Object.entries(value)) schema(item, `${at}/schemas/${name}`);
      else outside(value, `${at}/${key}`);
    }
  }
  outside(document, '');
  return found;
}

/**
 * Entries of YAML flow mappings that have a key but no value: `{ description: a, b }` reads as
 * `description: a` plus a key `b` with no value, silently. Each as `line: key`.
 */
export function valuelessFlowEntries(yamlText: string): string[] {
  const document = parseDocument(yamlText);
  const found: string[] = [];
  visit(document, {
    Map(_key, map) {
      if (!isMap(map) || !map.flow) return;
      for (const pair of map.items) {
        if (isPair(pair) && pair.value === null) {
          const key = isScalar(pair.key) ? pair.key : undefined;
          const offset = key?.range?.[0] ?? 0;
          const line = yamlText.slice(0, offset).split('\n').length;
          found.push(`${line}: ${String(key?.value ?? pair.key)}`);
        }
      }
    },
  });
  return found;
}
