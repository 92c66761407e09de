import { readFile } from 'node:fs/promises';
import { en } from 'zod/locales';
import * as z from 'zod/mini';
import { processWide } from './process-wide.js';
import { ConfigurationError } from './settings.js';

// zod/mini: the same checks as zod at a fraction of its bundle size (this runs in every function).
z.config(en());
const nonEmpty = () => z.string().check(z.minLength(1));
const int = (min: number, max: number) => z.number().check(z.int(), z.minimum(min), z.maximum(max));

const connection = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('mssql'), connectionString: nonEmpty() }),
  /** An embedded database registered by name in this process (local stack and tests). */
  z.strictObject({ kind: z.literal('embedded'), name: nonEmpty() }),
]);

const identifierList = z.array(
  z.string().check(z.regex(/^(?:[A-Za-z_][A-Za-z0-9_]*\.)?[A-Za-z_][A-Za-z0-9_]*$/)),
);

const WEB_API_DEFAULTS = {
  CommandTimeoutAsync: 20,
  RequestMaxSecValidity: 300,
  CheckReplayRequest: true,
  ReplayRequestTime: 300,
  DefContentType: 'application/json' as const,
};

const webApiSettings = z.strictObject({
  CommandTimeoutAsync: z._default(int(1, 28), WEB_API_DEFAULTS.CommandTimeoutAsync),
  RequestMaxSecValidity: z._default(int(1, 86400), WEB_API_DEFAULTS.RequestMaxSecValidity),
  CheckReplayRequest: z._default(z.boolean(), WEB_API_DEFAULTS.CheckReplayRequest),
  ReplayRequestTime: z._default(int(1, 7 * 86400), WEB_API_DEFAULTS.ReplayRequestTime),
  DefContentType: z._default(
    z.enum(['application/json', 'application/xml']),
    WEB_API_DEFAULTS.DefContentType,
  ),
});

const tenant = z.strictObject({
  database: connection,
  /** The document database (SVCDOC); the application database when absent. */
  documentDatabase: z.optional(connection),
  dataApiUsers: z
    .array(
      z.strictObject({
        name: nonEmpty(),
        passwordHash: z.string().check(
          z.regex(/^scrypt\$\d+\$\d+\$\d+\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/, {
            error: 'must be an scrypt hash made by `npm run hash-password`',
          }),
        ),
      }),
    )
    .check(z.minLength(1)),
  dataSources: z.union([z.literal('*'), identifierList]),
  procedures: z._default(identifierList, []),
  webApi: z._default(webApiSettings, WEB_API_DEFAULTS),
});

const registrySchema = z.strictObject({
  tenants: z.record(z.string().check(z.regex(/^[a-z0-9][a-z0-9-]{0,62}$/)), tenant),
});

export type DatabaseConnection = z.infer<typeof connection>;
export type TenantConfig = z.infer<typeof tenant> & { readonly id: string };
export type WebApiSettings = z.infer<typeof webApiSettings>;

export interface TenantRegistry {
  get(id: string): TenantConfig | undefined;
  ids(): string[];
}

/** Validates a registry document; throws a ConfigurationError naming every bad setting. */
export function parseTenantRegistry(document: unknown): TenantRegistry {
  const parsed = registrySchema.safeParse(document);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const keys = 'keys' in issue && Array.isArray(issue.keys) ? ` (${issue.keys.join(', ')})` : '';
      return `${issue.path.join('.') || '(root)'}: ${issue.message}${keys}`;
    });
    throw new ConfigurationError(`Invalid tenant registry: ${problems.join('; ')}`);
  }
  const tenants = new Map<string, TenantConfig>(
    Object.entries(parsed.data.tenants).map(([id, config]) => [id, deepFreeze({ ...config, id })]),
  );
  return Object.freeze({
    get: (id: string) => tenants.get(id),
    ids: () => [...tenants.keys()],
  });
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

/** One per process (see process-wide.ts): the local stack's registry reaches its packaged functions. */
const loaded = processWide('tenant-registry', () => ({
  registry: undefined as Promise<TenantRegistry> | undefined,
}));

/**
 * The tenant registry of this process, loaded once per cold start from `TENANT_REGISTRY_FILE`
 * (a JSON file), `TENANT_REGISTRY_SECRET_ID` (Secrets Manager) or `TENANT_REGISTRY_PARAMETER`
 * (an SSM SecureString).
 */
export function loadTenantRegistry(): Promise<TenantRegistry> {
  loaded.registry ??= readRegistryDocument().then(parseTenantRegistry);
  const registry = loaded.registry;
  registry.catch(() => {
    if (loaded.registry === registry) loaded.registry = undefined;
  });
  return registry;
}

/** Replaces the process's registry (local stack and tests). */
export function setTenantRegistry(value: TenantRegistry | undefined): void {
  loaded.registry = value ? Promise.resolve(value) : undefined;
}

async function readRegistryDocument(): Promise<unknown> {
  const file = process.env.TENANT_REGISTRY_FILE;
  const secretId = process.env.TENANT_REGISTRY_SECRET_ID;
  const parameter = process.env.TENANT_REGISTRY_PARAMETER;
  let text: string | undefined;
  if (file) {
    text = await readFile(file, 'utf8');
  } else if (secretId) {
    const { SecretsManagerClient, GetSecretValueCommand } = await import('@aws-sdk/client-secrets-manager');
    const answer = await new SecretsManagerClient({}).send(new GetSecretValueCommand({ SecretId: secretId }));
    text = answer.SecretString;
  } else if (parameter) {
    const { SSMClient, GetParameterCommand } = await import('@aws-sdk/client-ssm');
    const answer = await new SSMClient({}).send(
      new GetParameterCommand({ Name: parameter, WithDecryption: true }),
    );
    text = answer.Parameter?.Value;
  } else {
    throw new ConfigurationError(
      'TENANT_REGISTRY_FILE, TENANT_REGISTRY_SECRET_ID or TENANT_REGISTRY_PARAMETER must be set',
    );
  }
  if (!text) throw new ConfigurationError('The tenant registry is empty');
  try {
    return JSON.parse(text);
  } catch {
    throw new ConfigurationError('The tenant registry is not valid JSON');
  }
}
