import type { ColumnInfo, DataSourceInfo } from '../database.js';
import { isRecorded } from './changes.js';
import { visibleDataSource } from './columns.js';
import { continuesByKey } from './cursor.js';
import { servedDataSources } from './data-source.js';
import type { DataApiContext } from './read.js';
import { MAX_PAGE_ROWS } from './read.js';

/**
 * The per-tenant description (`GET /{tenant}/JsonAPI/openapi.json`, CONTRACT 4a): the Data API as
 * this tenant's users may call it, as OpenAPI 3.1. Each data source it may read has its own row
 * schema in `components.schemas` (its visible columns with their JSON types, formats and
 * nullability from the catalogue) and its own four read paths answering with it, so that a client
 * generated from the document types `body.SUBJECT[0].NAZEV` and refuses a table or column that is
 * not there.
 */
type Schema = Record<string, unknown>;

const TIMESTAMP = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}$';

/** The JSON Schema of a column's values as the Data API writes them (see records.ts). */
export function columnSchema(column: ColumnInfo): Schema {
  const type = column.dataType.toLowerCase();
  switch (column.kind) {
    case 'int':
      return { type: 'integer', format: type === 'bigint' ? 'int64' : 'int32' };
    case 'decimal':
      return { type: 'number' };
    case 'float':
      return { type: 'number', format: type === 'real' ? 'float' : 'double' };
    case 'string':
      return { type: 'string' };
    case 'datetime':
      return { type: 'string', pattern: TIMESTAMP, description: 'Date and time, no zone, no fraction' };
    case 'date':
      return { type: 'string', pattern: TIMESTAMP, description: 'A date, at T00:00:00' };
    case 'time':
      return { type: 'string', pattern: '^\\d{2}:\\d{2}:\\d{2}$' };
    case 'guid':
      return { type: 'string', format: 'uuid' };
    case 'binary':
      return { type: 'string', contentEncoding: 'base64' };
    case 'bool':
      return { type: 'integer', enum: [0, 1] };
    default:
      return { description: `Database type ${column.dataType}` };
  }
}

/** The name a source is called by in paths and answers: bare in `dbo`, else `schema.NAME`. */
export function describedName(source: DataSourceInfo): string {
  return source.schema.toLowerCase() === 'dbo' ? source.name : `${source.schema}.${source.name}`;
}

/** A record of the source: every visible column; those that cannot be NULL are always present. */
function rowSchema(source: DataSourceInfo): Schema {
  const required = source.columns.filter((c) => c.nullable === false).map((c) => c.name);
  return {
    type: 'object',
    description: `A record of ${source.kind} ${source.schema}.${source.name}; a NULL column is left out.`,
    properties: Object.fromEntries(source.columns.map((c) => [c.name, columnSchema(c)])),
    ...(required.length > 0 ? { required } : {}),
    additionalProperties: false,
  };
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const response = (name: string) => ({ $ref: `#/components/responses/${name}` });
const ERRORS = {
  '400': response('BadRequest'),
  '401': response('Unauthorized'),
  '403': response('Forbidden'),
  '404': response('NotFound'),
  '503': response('Unavailable'),
};
const NOT_MODIFIED = {
  description: '`If-None-Match` names the current `ETag`: no body.',
  headers: { ETag: { $ref: '#/components/headers/ETag' } },
};
const columnsParameter = { $ref: '#/components/parameters/columns' };
const ifNoneMatch = { $ref: '#/components/parameters/ifNoneMatch' };

function answer(root: string, items: Schema, description: string, link = false): Schema {
  return {
    description,
    headers: {
      ETag: { $ref: '#/components/headers/ETag' },
      ...(link ? { Link: { $ref: '#/components/headers/Link' } } : {}),
    },
    content: {
      'application/json': {
        schema: {
          type: 'object',
          required: [root],
          properties: { [root]: { type: 'array', items } },
          additionalProperties: false,
        },
      },
    },
  };
}

/** The paths of one data source, under `base` (`/{tenant}/JsonAPI`). */
function sourcePaths(base: string, source: DataSourceInfo, schemaName: string): [string, Schema][] {
  const name = describedName(source);
  const row = ref(schemaName);
  const id = name.replace(/[^A-Za-z0-9_]/g, '_');
  const records = (summary: string, link = false) => answer(name, row, summary, link);
  const redirect = {
    description: 'Over the inline limit: written to S3; `Location` is a presigned URL valid 15 minutes.',
    headers: { Location: { required: true, schema: { type: 'string', format: 'uri' } } },
  };
  const read = (operationId: string, summary: string, parameters: Schema[], ok: Schema) => ({
    get: {
      operationId: `${operationId}_${id}`,
      summary,
      tags: [name],
      parameters: [...parameters, ifNoneMatch],
      responses: { '200': ok, '303': redirect, '304': NOT_MODIFIED, ...ERRORS },
    },
  });
  return [
    [
      `${base}/Data/getData/${name}`,
      read('getData', `Every row of ${name}`, [columnsParameter], records(`Every row of ${name}`)),
    ],
    [
      `${base}/Data/getDataWithCondition/${name}`,
      read(
        'getDataWithCondition',
        `The rows of ${name} that satisfy a T-SQL condition`,
        [
          {
            name: 'condition',
            in: 'query',
            required: true,
            description: `A T-SQL boolean expression over the columns of ${name}.`,
            schema: { type: 'string' },
          },
          columnsParameter,
        ],
        records('The rows that satisfy the condition'),
      ),
    ],
    [
      `${base}/Data/getDataPaginate/${name}`,
      read(
        'getDataPaginate',
        `One page of ${name} in its deterministic order`,
        [
          {
            name: 'fromRow',
            in: 'query',
            required: false,
            description: 'The first row, from 1; give it or `after`.',
            schema: { type: 'integer', minimum: 1 },
          },
          {
            name: 'rows',
            in: 'query',
            required: true,
            schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_ROWS },
          },
          {
            name: 'after',
            in: 'query',
            required: false,
            description: 'The cursor of the `Link: <…>; rel="next"` of the page before.',
            schema: { type: 'string' },
          },
          columnsParameter,
        ],
        records('The page; a full one links to the next', true),
      ),
    ],
    [
      `${base}/Data/getRowsCount/${name}`,
      read(
        'getRowsCount',
        `The number of rows of ${name}`,
        [],
        answer(
          name,
          {
            type: 'object',
            required: ['rowsCount'],
            properties: { rowsCount: { type: 'integer', minimum: 0 } },
            additionalProperties: false,
          },
          'The number of rows',
        ),
      ),
    ],
  ];
}

/** The getChanges path of a recorded table (CONTRACT 4b): records and tombstones, linked on. */
function changesPath(base: string, source: DataSourceInfo, schemaName: string): [string, Schema] {
  const name = describedName(source);
  const id = name.replace(/[^A-Za-z0-9_]/g, '_');
  const keys = source.primaryKey.map((k) => source.columns.find((c) => c.name === k)!);
  const tombstone = {
    type: 'object',
    description: 'A deleted row: its key and `@removed`.',
    required: [...source.primaryKey, '@removed'],
    properties: {
      ...Object.fromEntries(keys.map((c) => [c.name, columnSchema(c)])),
      '@removed': {
        type: 'object',
        required: ['reason'],
        properties: { reason: { const: 'deleted' } },
        additionalProperties: false,
      },
    },
    additionalProperties: false,
  };
  return [
    `${base}/Data/getChanges/${name}`,
    {
      get: {
        operationId: `getChanges_${id}`,
        summary: `The rows of ${name}, then what changed since a sync token`,
        description:
          'Without `token`: the rows in key order. With the token of a `Link: <…>; rel="sync"`: the rows ' +
          'changed since (current records) and deleted (tombstones), net per key. Follow `rel="next"` ' +
          'while it comes; keep the token of `rel="sync"` for the next time. 410: start again without a token.',
        tags: [name],
        parameters: [
          {
            name: 'token',
            in: 'query',
            required: false,
            description: 'The token of the `Link` of the previous answer.',
            schema: { type: 'string' },
          },
          {
            name: 'rows',
            in: 'query',
            required: false,
            schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_ROWS, default: 1000 },
          },
          columnsParameter,
        ],
        responses: {
          '200': {
            description:
              'One page; `Link` says `next` (more follows) or `sync` (the token to come back with).',
            headers: { Link: { required: true, schema: { type: 'string' } } },
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: [name],
                  properties: { [name]: { type: 'array', items: { anyOf: [tombstone, ref(schemaName)] } } },
                  additionalProperties: false,
                },
              },
            },
          },
          '303': {
            description:
              'Over the inline limit: written to S3; `Location` is a presigned URL valid 15 minutes.',
            headers: { Location: { required: true, schema: { type: 'string', format: 'uri' } } },
          },
          ...ERRORS,
          '410': response('Gone'),
        },
      },
    },
  ];
}

const subscriptionSchema = {
  type: 'object',
  required: ['id', 'source', 'url', 'state', 'createdAt', 'consecutiveFailures'],
  properties: {
    id: { type: 'string', pattern: '^sub_[0-9a-f]{24}$' },
    source: { type: 'string' },
    url: { type: 'string', format: 'uri' },
    state: { type: 'string', enum: ['pending', 'active', 'disabled'] },
    createdAt: { type: 'string', format: 'date-time' },
    lastChangeAt: { type: ['string', 'null'], format: 'date-time' },
    lastNotifiedAt: { type: ['string', 'null'], format: 'date-time' },
    lastDeliveredAt: { type: ['string', 'null'], format: 'date-time' },
    consecutiveFailures: { type: 'integer', minimum: 0 },
    failingSince: { type: ['string', 'null'], format: 'date-time' },
    disabledAt: { type: ['string', 'null'], format: 'date-time' },
    disabledReason: { type: ['string', 'null'] },
    secretChangedAt: { type: ['string', 'null'], format: 'date-time' },
    secret: { type: 'string', description: 'Only when made and on rotation: the `whsec_…` secret.' },
  },
};

/** The subscription routes (CONTRACT 4c): `source` one of the tables with a getChanges path. */
function subscriptionPaths(base: string, sources: readonly string[]): Record<string, Schema> {
  const json = (description: string, schema: Schema) => ({
    description,
    content: { 'application/json': { schema } },
  });
  const id = [{ name: 'subscriptionId', in: 'path', required: true, schema: { type: 'string' } }];
  const one = { ...ERRORS, '200': json('The subscription.', subscriptionSchema) };
  return {
    [`${base}/Subscriptions`]: {
      post: {
        operationId: 'createSubscription',
        summary: 'Be told when a table changes: a signed `table.changed` to `url`, then pull with getChanges',
        tags: ['Subscriptions'],
        parameters: [{ $ref: '#/components/parameters/idempotencyKey' }],
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['source', 'url'],
                additionalProperties: false,
                properties: {
                  source: { type: 'string', enum: [...sources] },
                  url: { type: 'string', format: 'uri' },
                },
              },
            },
          },
        },
        responses: {
          ...ERRORS,
          '201': {
            ...json(
              'Made; pending until its ping is answered 2xx. Keep `secret`: it is shown once (and again to a retry under the same Idempotency-Key).',
              subscriptionSchema,
            ),
            headers: { 'Idempotent-Replayed': { $ref: '#/components/headers/IdempotentReplayed' } },
          },
          '409': response('Conflict'),
          '422': response('IdempotencyKeyReused'),
        },
      },
      get: {
        operationId: 'listSubscriptions',
        summary: 'Your subscriptions',
        tags: ['Subscriptions'],
        responses: {
          ...ERRORS,
          '200': json('Yours, oldest first.', {
            type: 'object',
            required: ['subscriptions'],
            properties: { subscriptions: { type: 'array', items: subscriptionSchema } },
          }),
        },
      },
    },
    [`${base}/Subscriptions/{subscriptionId}`]: {
      get: {
        operationId: 'getSubscription',
        summary: 'One of your subscriptions: its state and its last deliveries',
        tags: ['Subscriptions'],
        parameters: id,
        responses: one,
      },
      delete: {
        operationId: 'deleteSubscription',
        summary: 'Stop a subscription: no notification after this',
        tags: ['Subscriptions'],
        parameters: id,
        responses: { ...ERRORS, '204': { description: 'Deleted.' } },
      },
    },
    [`${base}/Subscriptions/{subscriptionId}/rotate`]: {
      post: {
        operationId: 'rotateSubscriptionSecret',
        summary: 'A new signing secret (shown once); the old one signs too for the overlap',
        tags: ['Subscriptions'],
        parameters: id,
        responses: one,
      },
    },
    [`${base}/Subscriptions/{subscriptionId}/enable`]: {
      post: {
        operationId: 'enableSubscription',
        summary: 'Turn a disabled subscription on again: pending until its ping is answered 2xx',
        tags: ['Subscriptions'],
        parameters: id,
        responses: one,
      },
    },
  };
}

/** The events a subscription receives (OpenAPI 3.1 `webhooks`). */
function notificationWebhooks(): Record<string, Schema> {
  const event = (type: string, operationId: string, summary: string) => ({
    post: {
      operationId,
      summary,
      description:
        'Standard Webhooks headers `webhook-id`, `webhook-timestamp`, `webhook-signature` (keyed with the ' +
        "subscription's `whsec_…` secret). No row data: pull with your sync link. Answer 2xx within 10 s.",
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['type', 'subscription', 'tenant', 'source', 'timestamp'],
              properties: {
                type: { const: type },
                subscription: { type: 'string' },
                tenant: { type: 'string' },
                source: { type: 'string' },
                timestamp: { type: 'string', format: 'date-time' },
              },
            },
          },
        },
      },
      // Sent by the service, not a route of it: none of the document's schemes; the receiver
      // checks `webhook-signature`.
      security: [],
      responses: { '200': { description: 'Received.' } },
    },
  });
  return {
    tableChanged: event('table.changed', 'tableChanged', 'The table changed: pull with getChanges'),
    subscriptionPing: event(
      'subscription.ping',
      'subscriptionPing',
      'At creation and on enable: answer 2xx to activate',
    ),
  };
}

/** The document for the tenant of `ctx`; `base` is the Data API's path of the tenant (`/demo/JsonAPI`). */
/** The sign-in schemes of a tenant's description. */
export interface SignInSchemes {
  /** HTTP Basic (off where the registry's `dataApiAuth` is `["bearer"]`). */
  readonly basic: boolean;
  readonly bearer: boolean;
  /** The gateway's token endpoint (the tenant has `oauthClients`), with the scopes described. */
  readonly tokenUrl?: string;
}

/** The scopes of CONTRACT 4d as the description lists them; `<Source>` for each source scope. */
function scopeDescriptions(sources: readonly string[]): Record<string, string> {
  const scopes: Record<string, string> = {
    'data.read': 'Read every data source of the tenant',
    'files.read': 'getFile',
    'files.write': 'setFile',
    'changes.read': 'getChanges of every recorded table',
    'subscriptions.write': 'Change notifications (with changes.read of the source)',
  };
  for (const source of sources) scopes[`data.read:${source}`] = `Read ${source} only`;
  return scopes;
}

/** The security schemes and the document's requirement: any one of them. */
function securityOf(signIn: SignInSchemes, sources: readonly string[]) {
  const schemes: Record<string, Schema> = {};
  if (signIn.basic) schemes.basicAuth = { type: 'http', scheme: 'basic' };
  if (signIn.bearer) {
    schemes.bearerAuth = {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
      description: "A token of the gateway's token endpoint or of the tenant's identity provider.",
    };
  }
  if (signIn.bearer && signIn.tokenUrl) {
    schemes.oauth2 = {
      type: 'oauth2',
      flows: { clientCredentials: { tokenUrl: signIn.tokenUrl, scopes: scopeDescriptions(sources) } },
    };
  }
  return { schemes, security: Object.keys(schemes).map((name) => ({ [name]: [] })) };
}

export async function describeDataApi(
  ctx: Pick<DataApiContext, 'reader' | 'allowed' | 'hidden' | 'grant'>,
  tenant: string,
  base: string,
  version: string,
  /** The tables whose changes the tenant records (registry `changeFeed`): they get a getChanges path. */
  recorded: readonly string[] = [],
  /**
   * Whether the database records a table's changes (its recording is installed): a table the
   * registry lists but the database does not record would answer getChanges only 400, so it is not
   * described. Without it, the registry's word is taken.
   */
  isRecording: (source: DataSourceInfo) => Promise<boolean> = async () => true,
  /** How callers sign in (CONTRACT 4d): the schemes declared, and the token URL where the gateway issues tokens. */
  signIn: SignInSchemes = { basic: true, bearer: true },
): Promise<Schema> {
  const sources = (await servedDataSources(ctx.reader.catalogue, ctx.allowed))
    .filter((source) => ctx.grant?.permits(source) ?? true)
    .map((source) => visibleDataSource(source, ctx.hidden));
  const schemas: Record<string, Schema> = {
    Error: {
      type: 'object',
      required: ['error'],
      properties: {
        error: {
          type: 'object',
          required: ['code', 'message', 'requestId'],
          properties: {
            code: { type: 'string' },
            message: { type: 'string' },
            requestId: { type: 'string' },
          },
        },
      },
    },
  };
  const paths: Record<string, Schema> = {};
  const subscribable: string[] = [];
  for (const source of sources) {
    const schemaName = describedName(source);
    schemas[schemaName] = rowSchema(source);
    for (const [path, item] of sourcePaths(base, source, schemaName)) paths[path] = item;
    if (
      source.kind === 'table' &&
      continuesByKey(source) &&
      isRecorded(recorded, source) &&
      (await isRecording(source))
    ) {
      const [path, item] = changesPath(base, source, schemaName);
      paths[path] = item;
      subscribable.push(describedName(source));
    }
  }
  // Change notifications (CONTRACT 4c) for the tables that have a getChanges path.
  if (subscribable.length > 0) Object.assign(paths, subscriptionPaths(base, subscribable));
  const { schemes, security } = securityOf(signIn, sources.map(describedName));
  const error = (description: string, headers?: Schema) => ({
    description,
    ...(headers ? { headers } : {}),
    content: { 'application/json': { schema: ref('Error') } },
  });
  return {
    openapi: '3.1.0',
    info: {
      title: `Data API of tenant ${tenant}`,
      version,
      description:
        'The tables and views this tenant may read, each with its own record schema. Records leave ' +
        'NULL columns out; with `columns=` they hold only the columns chosen.',
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [{ url: '/' }],
    security,
    tags: [
      ...sources.map((source) => ({
        name: describedName(source),
        description: `The ${source.kind} ${source.schema}.${source.name}: its records and their schema.`,
      })),
      ...(subscribable.length > 0
        ? [
            {
              name: 'Subscriptions',
              description:
                'Told when a recorded table changes: a signed `table.changed`, then pull with getChanges.',
            },
          ]
        : []),
    ],
    paths,
    ...(subscribable.length > 0 ? { webhooks: notificationWebhooks() } : {}),
    components: {
      securitySchemes: schemes,
      schemas,
      parameters: {
        columns: {
          name: 'columns',
          in: 'query',
          required: false,
          description: 'Only these columns, separated by commas (bare or `[..]`, any case).',
          schema: { type: 'string' },
        },
        ifNoneMatch: {
          name: 'If-None-Match',
          in: 'header',
          required: false,
          description: 'The `ETag` of an answer held: 304 while it is still current.',
          schema: { type: 'string' },
        },
        idempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description:
            'Makes a retry safe: 1-255 visible ASCII characters (bare or a quoted string), yours alone. A retry with the same key and body gets the first answer (`Idempotent-Replayed: true`) and changes nothing.',
          schema: { type: 'string', minLength: 1, maxLength: 257 },
        },
      },
      headers: {
        ETag: { description: 'A strong tag of the body.', schema: { type: 'string' } },
        Link: { description: '`<…?after=…&rows=…>; rel="next"` on a full page.', schema: { type: 'string' } },
        IdempotentReplayed: {
          description: '`true` on the first answer given again to a retry under its Idempotency-Key.',
          schema: { type: 'string', const: 'true' },
        },
      },
      responses: {
        BadRequest: error('The request is wrong; the message says how.'),
        Unauthorized: error(
          'Credentials missing or wrong: HTTP Basic, or a bearer token not valid (invalid_token).',
          {
            'WWW-Authenticate': { required: true, schema: { type: 'string' } },
          },
        ),
        Forbidden: error('The bearer token lacks the scope the call needs (insufficient_scope).', {
          'WWW-Authenticate': { required: true, schema: { type: 'string' } },
        }),
        NotFound: error('Unknown tenant or data source.'),
        Gone: error('The sync token has expired: start again without a token.'),
        Conflict: error(
          'The tenant holds its maxSubscriptions already (subscription_limit), or the first call under this Idempotency-Key still runs (idempotency_key_in_progress: ask again after Retry-After).',
        ),
        IdempotencyKeyReused: error(
          'This Idempotency-Key was used with another request (idempotency_key_reused): use a new key.',
        ),
        Unavailable: error('The database is not reachable.'),
      },
    },
  };
}
