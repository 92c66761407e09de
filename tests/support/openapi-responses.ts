import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS: its default export arrives wrapped under Node's ESM loader.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as unknown as (ajv: Ajv2020) => void;

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;

interface ResponseObject {
  headers?: Record<string, { required?: boolean }>;
  content?: Record<string, { schema?: unknown }>;
  $ref?: string;
}
interface Operation {
  operationId: string;
  responses: Record<string, ResponseObject>;
}

/** An HTTP answer as a client saw it. */
export interface ObservedResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly body: string;
}

const pointerOf = (ref: string) => ref.replace(/^#/, '');
const escapePointer = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');

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
    const resolved = target
      .split('/')
      .slice(1)
      .reduce<unknown>(
        (node, segment) => (node as Record<string, unknown>)[segment.replace(/~1/g, '/').replace(/~0/g, '~')],
        document,
      );
    return { response: resolved as ResponseObject, pointer: target };
  }

  return {
    /** What is wrong with `observed` as the answer to `method url`; empty when it conforms. */
    check(method: string, url: string, observed: ObservedResponse): string[] {
      const path = new URL(url).pathname;
      const route = routes.find((r) => r.method === method && r.pattern.test(path));
      if (!route) return [`${method} ${path} is not in the document`];
      const name = `${route.operation.operationId} ${observed.status}`;
      const documented = route.operation.responses[String(observed.status)];
      if (!documented) return [`${name}: status ${observed.status} is not documented`];
      seen.add(name);
      const { response, pointer } = resolve(
        documented,
        `/paths/${escapePointer(route.path)}/${method.toLowerCase()}/responses/${observed.status}`,
      );
      const problems: string[] = [];
      for (const [header, spec] of Object.entries(response.headers ?? {})) {
        if (spec.required && !observed.headers.has(header))
          problems.push(`${name}: header ${header} is missing`);
      }
      if (observed.body === '') return problems;
      const contentType = (observed.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
      const content = response.content ?? {};
      const media = content[contentType] ?? content[`${contentType.split('/')[0]}/*`] ?? content['*/*'];
      if (!media) return [...problems, `${name}: content type "${contentType}" is not documented`];
      if (contentType === 'application/json' && media.schema) {
        const schemaPointer = `${pointer}/content/${escapePointer(contentType)}/schema`;
        const validate = ajv.getSchema(`openapi.json#${schemaPointer}`);
        if (!validate) return [...problems, `${name}: no schema at ${schemaPointer}`];
        if (!validate(JSON.parse(observed.body))) {
          problems.push(
            `${name}: body ${observed.body.slice(0, 200)} does not match: ${ajv.errorsText(validate.errors)}`,
          );
        }
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
