import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { ConfigurationError } from './settings.js';

const connection = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('mssql'), connectionString: z.string().min(1) }).strict(),
  /** An embedded database registered by name in this process (local stack and tests). */
  z.object({ kind: z.literal('embedded'), name: z.string().min(1) }).strict(),
]);

const identifierList = z.array(z.string().regex(/^(?:[A-Za-z_][A-Za-z0-9_]*\.)?[A-Za-z_][A-Za-z0-9_]*$/));

const webApiSettings = z
  .object({
    CommandTimeoutAsync: z.number().int().min(1).max(28).default(20),
    RequestMaxSecValidity: z.number().int().min(1).max(86400).default(300),
    CheckReplayRequest: z.boolean().default(true),
    ReplayRequestTime: z
      .number()
      .int()
      .min(1)
      .max(7 * 86400)
      .default(300),
    DefContentType: z.enum(['application/json', 'application/xml']).default('application/json'),
  })
  .strict();

const tenant = z
  .object({
    database: connection,
    /** The document database (SVCDOC); the application database when absent. */
    documentDatabase: connection.optional(),
    dataApiUsers: z
      .array(
        z
          .object({
            name: z.string().min(1),
            passwordHash: z.string().regex(/^scrypt\$\d+\$\d+\$\d+\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/, {
              message: 'must be an scrypt hash made by `npm run hash-password`',
            }),
          })
          .strict(),
      )
      .min(1),
    dataSources: z.union([z.literal('*'), identifierList]),
    procedures: identifierList.default([]),
    webApi: webApiSettings.default({
      CommandTimeoutAsync: 20,
      RequestMaxSecValidity: 300,
      CheckReplayRequest: true,
      ReplayRequestTime: 300,
      DefContentType: 'application/json',
    }),
  })
  .strict();

const registrySchema = z
  .object({ tenants: z.record(z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/), tenant) })
  .strict();

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
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
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

let registry: Promise<TenantRegistry> | undefined;

/**
 * The tenant registry of this process, loaded once per cold start from `TENANT_REGISTRY_FILE`
 * (a JSON file), `TENANT_REGISTRY_SECRET_ID` (Secrets Manager) or `TENANT_REGISTRY_PARAMETER`
 * (an SSM SecureString).
 */
export function loadTenantRegistry(): Promise<TenantRegistry> {
  registry ??= readRegistryDocument().then(parseTenantRegistry);
  registry.catch(() => {
    registry = undefined;
  });
  return registry;
}

/** Replaces the process's registry (local stack and tests). */
export function setTenantRegistry(value: TenantRegistry | undefined): void {
  registry = value ? Promise.resolve(value) : undefined;
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
