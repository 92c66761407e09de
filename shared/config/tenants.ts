/**
 * What the tenant registry must hold (CONTRACT.md section 2, docs/configuration.md): its schema, the
 * checks of its keys, certificates, addresses and cross-tenant settings, and the parse of a document
 * into a {@link TenantRegistry}. The registry of this process (read, kept, read again, a tenant
 * looked up) is tenant-registry.ts's.
 */
import { createPrivateKey, type JsonWebKey, type KeyObject, X509Certificate } from 'node:crypto';
import { parse as parseConnectionString } from '@tediousjs/connection-string';
import { en } from 'zod/locales';
import * as z from 'zod/mini';
import {
  ConnectionSecurityError,
  isServerName,
  readConnectionSecurity,
} from '../adapters/mssql/connection-security.js';
import { isScope, SCOPE_GRAMMAR } from '../core/auth/caller.js';
import { DEFAULT_IDEMPOTENCY_RETENTION_HOURS } from '../core/idempotency.js';
import { changeFeedNameProblem, parseQualifiedName } from '../core/sql-names.js';
import { forbiddenAddressReason, ipLiteralHost } from '../core/webhook/target.js';
import { boolFromEnv, ConfigurationError, getSettings } from './settings.js';

// zod/mini: the same checks as zod at a fraction of its bundle size (this runs in every function).
z.config(en());
const nonEmpty = () => z.string().check(z.minLength(1));
const int = (min: number, max: number) => z.number().check(z.int(), z.minimum(min), z.maximum(max));

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[^-]*-----END CERTIFICATE-----/g;

/**
 * Why `text` is not one or more PEM certificates, or undefined. Text between them is allowed (CA
 * bundles carry `# Subject:` lines; TLS ignores it), a private key is not: it has no business in
 * the registry, and whoever pasted it meant the certificate.
 */
function pemCertificatesProblem(text: string): string | undefined {
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text)) {
    return "holds a private key: give the CA certificate (or the server's self-signed certificate), never a key";
  }
  if (!text.includes('\n') && text.includes('\\n')) {
    return 'has its line breaks as a backslash and n: in JSON write each as \\n, not \\\\n';
  }
  const certificates = text.match(PEM_CERTIFICATE) ?? [];
  if (certificates.length === 0) {
    return 'must be one or more PEM certificates, "-----BEGIN CERTIFICATE-----" … "-----END CERTIFICATE-----"';
  }
  for (const [index, certificate] of certificates.entries()) {
    try {
      new X509Certificate(certificate);
    } catch {
      return `certificate ${index + 1} of ${certificates.length} is not a valid X.509 certificate`;
    }
  }
  return undefined;
}

/** A tenant's TLS settings for its SQL Server (docs/sql-server.md, "Encrypted connections to SQL Server"). */
const sqlServerTls = z
  .strictObject({
    /** The CA certificates (PEM) to trust for this server, instead of the system's. */
    ca: z.optional(
      nonEmpty().check(
        z.superRefine((text, context) => {
          const problem = pemCertificatesProblem(text);
          if (problem) context.addIssue({ code: 'custom', message: problem, input: '(not shown)' });
        }),
      ),
    ),
    /** The name the certificate must carry, when the connection string reaches the server by another. */
    serverName: z.optional(
      z.string().check(
        z.refine(isServerName, {
          error: "must be a host name or an IP address: a name the server's certificate carries",
        }),
      ),
    ),
  })
  .check(
    z.refine((tls) => tls.ca !== undefined || tls.serverName !== undefined, {
      error: 'give ca, serverName or both',
    }),
  );

const mssqlConnection = z
  .strictObject({
    kind: z.literal('mssql'),
    connectionString: nonEmpty(),
    tls: z.optional(sqlServerTls),
  })
  .check(
    // The connection string's own TLS keywords, checked with the registry's settings: a value the
    // service cannot honour, or settings the string would void, are refused with the registry.
    z.superRefine((connection, context) => {
      try {
        readConnectionSecurity(connection.connectionString, connection.tls);
      } catch (error) {
        if (!(error instanceof ConnectionSecurityError)) throw error;
        context.addIssue({
          code: 'custom',
          message: error.message,
          path: [error.setting],
          input: '(not shown)',
        });
      }
    }),
  );

const connection = z.discriminatedUnion('kind', [
  mssqlConnection,
  /** An embedded database registered by name in this process (local stack and tests). */
  z.strictObject({ kind: z.literal('embedded'), name: nonEmpty() }),
]);

const qualifiedName = z.string().check(z.regex(/^(?:[A-Za-z_][A-Za-z0-9_]*\.)?[A-Za-z_][A-Za-z0-9_]*$/));
const identifierList = z.array(qualifiedName);

/**
 * A Web API application of the tenant (CONTRACT.md section 2): the `x-api-key` it sends, the API
 * hashes its signatures are keyed with (several while one is rotated: a signature made with any of
 * them is accepted), and whether it may call.
 */
export const webApiApplication = z.strictObject({
  /** What `WS_JOURNAL.APPLICATION_ID` records: 997 answers an application only its own calls. */
  id: int(1, 2_147_483_647),
  /** Who it is, for whoever reads the registry; the service does not use it. */
  name: z.optional(z.string().check(z.maxLength(200))),
  apiKey: z.string().check(
    z.regex(/^[\x21-\x7e]{1,200}$/, {
      error: 'must be 1 to 200 visible ASCII characters (it travels in the x-api-key header)',
    }),
  ),
  apiHashes: z
    .array(
      z
        .string()
        .check(
          z.minLength(1, { error: 'must not be empty' }),
          z.maxLength(1000, { error: 'must be at most 1000 characters' }),
        ),
    )
    .check(
      z.minLength(1, { error: 'give at least one API hash (two or more while one is rotated)' }),
      z.maxLength(5, { error: 'give at most 5 API hashes' }),
    ),
  active: z._default(z.boolean(), true),
});

export type WebApiApplication = z.infer<typeof webApiApplication>;

/** Each id and each key once within a tenant; the message names the other entry, never the key. */
const applicationList = z.array(webApiApplication).check(
  z.maxLength(10_000),
  z.superRefine((applications, context) => {
    const ids = new Map<number, number>();
    const keys = new Map<string, number>();
    for (const [index, application] of applications.entries()) {
      const sameId = ids.get(application.id);
      if (sameId === undefined) ids.set(application.id, index);
      else
        context.addIssue({
          code: 'custom',
          path: [index, 'id'],
          message: `${application.id} is also the id of applications.${sameId}: each id once (WS_JOURNAL tells applications apart by it)`,
          input: application.id,
        });
      const sameKey = keys.get(application.apiKey);
      if (sameKey === undefined) keys.set(application.apiKey, index);
      else
        context.addIssue({
          code: 'custom',
          path: [index, 'apiKey'],
          message: `is also the apiKey of applications.${sameKey}: each key once`,
          input: '(not shown)',
        });
    }
  }),
);

/**
 * The ERP's own register of applications, named instead of a list (read only): the one layout the
 * service reads, `WS_APPLICATION` with `ID`, `API_KEY`, `API_HASH`, `AKTIVNI`, in `dbo`.
 */
const erpApplicationRegister = z.strictObject({
  erpTable: z.string().check(
    z.regex(/^(?:dbo\.)?WS_APPLICATION$/i, {
      error:
        'must be dbo.WS_APPLICATION: the one layout of an ERP register the service reads (ID, API_KEY, API_HASH, AKTIVNI)',
    }),
  ),
});

const WEB_API_DEFAULTS = {
  CommandTimeoutAsync: 20,
  RequestMaxSecValidity: 300,
  CheckReplayRequest: true,
  ReplayRequestTime: 300,
  DefContentType: 'application/json' as const,
  applications: [] as WebApiApplication[],
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
  /**
   * The tenant's Web API applications (none: every key is 401/102), or the ERP's register of them
   * named instead: `{"erpTable": "dbo.WS_APPLICATION"}`.
   */
  applications: z._default(
    z.union([applicationList, erpApplicationRegister], {
      error:
        'must be a list of applications ({"id", "apiKey", "apiHashes", "active"}), or {"erpTable": "dbo.WS_APPLICATION"}',
    }),
    () => [],
  ),
});

const scopeList = z.array(z.string().check(z.refine(isScope, { error: `must be one of ${SCOPE_GRAMMAR}` })));

const LOOPBACK_HOST = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

/**
 * Where an identity provider publishes its keys: https to a public address; http, or a loopback,
 * private, link-local or metadata address, only where `WEBHOOK_ALLOW_PRIVATE_TARGETS` is true (the
 * local stack and tests; then http to a loopback address only), as CONTRACT 4d says. The service
 * fetches it as it would a webhook URL: from inside the deployment's network. An IP literal is
 * judged here; a host name on the addresses it resolves to when fetched (adapters/jose/jwks.ts).
 */
function jwksUriProblem(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'must be an absolute https URL';
  }
  if (url.username || url.password) return 'must not carry credentials';
  const allowPrivateTargets = boolFromEnv('WEBHOOK_ALLOW_PRIVATE_TARGETS', false);
  if (url.protocol === 'https:') {
    const literal = ipLiteralHost(url);
    const reason = literal === undefined || allowPrivateTargets ? undefined : forbiddenAddressReason(literal);
    if (!reason) return undefined;
    return `must not be at address ${literal}, which is ${reason} (such addresses only where WEBHOOK_ALLOW_PRIVATE_TARGETS is true)`;
  }
  if (url.protocol === 'http:' && LOOPBACK_HOST.test(url.hostname) && allowPrivateTargets) return undefined;
  return 'must be https (http only to a loopback address where WEBHOOK_ALLOW_PRIVATE_TARGETS is true)';
}

/** A tenant's own identity provider whose tokens it accepts (CONTRACT 4d). */
const tokenIssuer = z.strictObject({
  /** The tokens' `iss`, exactly (Entra ID: `https://login.microsoftonline.com/<tenant id>/v2.0`). */
  issuer: nonEmpty(),
  /** The `aud` the tokens must carry (one of, where `aud` is a list), or any of several. */
  audience: z.union([nonEmpty(), z.array(nonEmpty()).check(z.minLength(1), z.maxLength(100))]),
  /**
   * Where the audience is: `aud` (the standard), or `client_id` for an issuer whose access tokens
   * carry none (Amazon Cognito: `audience` then lists the app clients allowed).
   */
  audienceClaim: z._default(z.enum(['aud', 'client_id']), 'aud'),
  /**
   * Taken off the front of each scope before it is read (Cognito names a resource server's scopes
   * `<identifier>/<scope>`: `erp-gateway/` makes `erp-gateway/data.read` the scope `data.read`).
   */
  scopePrefix: z.optional(z.string().check(z.minLength(1), z.maxLength(200))),
  jwksUri: z.string().check(
    z.superRefine((text, context) => {
      const problem = jwksUriProblem(text);
      if (problem) context.addIssue({ code: 'custom', message: problem, input: text });
    }),
  ),
  /** The claim that carries the scopes: `scope` (space-separated), `scp`, or `roles` (Entra ID's application roles). */
  scopeClaim: z._default(z.enum(['scope', 'scp', 'roles']), 'scope'),
});

/** A machine client of the gateway's own token endpoint (CONTRACT 4d). */
const oauthClient = z.strictObject({
  clientId: z.string().check(
    z.regex(/^[A-Za-z0-9._~-]{1,128}$/, {
      error: 'must be 1 to 128 of letters, digits, ".", "_", "~", "-"',
    }),
  ),
  /** scrypt hashes of its secret (`npm run hash-password`); two during a rotation. */
  secretHashes: z
    .array(
      z.string().check(
        z.regex(/^scrypt\$\d+\$\d+\$\d+\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/, {
          error: 'must be an scrypt hash made by `npm run hash-password`',
        }),
      ),
    )
    .check(z.minLength(1), z.maxLength(2)),
  /** The scopes it may ask for. */
  scopes: scopeList.check(z.minLength(1)),
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
  /**
   * Columns no Data API user of the tenant sees (CONTRACT 4a): data source (`NAME` or
   * `schema.NAME`) to column names, case-insensitive. The service's own reads (webhook delivery)
   * are not affected.
   */
  hiddenColumns: z._default(z.record(qualifiedName, z.array(nonEmpty())), {}),
  webApi: z._default(webApiSettings, WEB_API_DEFAULTS),
  /**
   * The tables whose changes the tenant's database records (CONTRACT 4b), `NAME` or `schema.NAME`:
   * `getChanges` answers for them; the database's administrator turns recording on (db:apply).
   */
  changeFeed: z._default(identifierList, []),
  /** How long recorded changes are kept, and so how long a sync token stays good (days). */
  changeRetentionDays: z._default(int(1, 365), 7),
  /**
   * Change notifications (CONTRACT 4c): the most subscriptions the tenant's integrators may hold
   * together, and how long after a commit to a subscribed table its notification may start (the
   * notifier checks the tenant's subscribed tables this often).
   */
  maxSubscriptions: z._default(int(0, 10_000), 100),
  changeNotificationDelaySeconds: z._default(int(1, 900), 10),
  /**
   * Exactly once (CONTRACT 5a): how long the answer of a call sent with an `Idempotency-Key` is
   * kept for its retries (hours); a key used again after that is a new call.
   */
  idempotencyRetentionHours: z._default(int(1, 24 * 30), DEFAULT_IDEMPOTENCY_RETENTION_HOURS),
  /**
   * Sign-in of the Data API (CONTRACT 4d): `["basic","bearer"]` (the default) or `["bearer"]`
   * (Basic refused), the identity providers whose tokens the tenant accepts, the gateway's own
   * clients, and how long the gateway's tokens live.
   */
  dataApiAuth: z._default(z.array(z.enum(['basic', 'bearer'])).check(z.minLength(1)), ['basic', 'bearer']),
  tokenIssuers: z._default(z.array(tokenIssuer).check(z.maxLength(10)), []),
  oauthClients: z._default(
    z.array(oauthClient).check(
      z.maxLength(1000),
      z.refine((clients) => new Set(clients.map((c) => c.clientId)).size === clients.length, {
        error: 'each clientId once',
      }),
    ),
    [],
  ),
  tokenLifetimeSeconds: z._default(int(60, 3600), 900),
  /**
   * The tenant's fair share (CONTRACT.md section 2), where it differs from the deployment's
   * defaults (`TENANT_CONCURRENT_REQUESTS`, `TENANT_REQUESTS_PER_SECOND`).
   */
  limits: z.optional(
    z.strictObject({
      concurrentRequests: z.optional(
        int(1, 1000).check(
          z.refine(belowFunctionConcurrency, {
            error: () =>
              `must be below each HTTP function's reserved concurrency (${getSettings().tenantLimits.functionConcurrency}, ` +
              'requestFunctionConcurrency), or one tenant could take a whole function from the others: lower it, or raise ' +
              'requestFunctionConcurrency (the deploy parameter, or REQUEST_FUNCTION_CONCURRENCY for npm start)',
          }),
        ),
      ),
      requestsPerSecond: z.optional(int(1, 10_000)),
    }),
  ),
});

/**
 * The change feed names objects after each recorded table: a name that would make one too long for
 * the tenant's database is refused with the registry, by its path, rather than by the database later.
 */
function changeFeedProblems(id: string, config: z.infer<typeof tenant>): string[] {
  const dialect = config.database.kind === 'embedded' ? 'embedded' : 'mssql';
  return config.changeFeed.flatMap((name, index) => {
    const problem = changeFeedNameProblem(parseQualifiedName(name)?.name ?? name, dialect);
    return problem ? [`tenants.${id}.changeFeed.${index}: ${problem}`] : [];
  });
}

/** A tenant's concurrency must leave every function room for the others. */
function belowFunctionConcurrency(concurrentRequests: number): boolean {
  const capacity = getSettings().tenantLimits.functionConcurrency;
  return capacity === undefined || concurrentRequests < capacity;
}

const signingKey = z.string().check(z.minLength(32, { error: 'must be at least 32 characters of secret' }));

/**
 * A private key of the gateway's token endpoint as a JWK with its `kid`: EC P-256 (ES256),
 * Ed25519 (EdDSA) or RSA of 2048 bits at least (RS256, or PS256 with `"alg":"PS256"`).
 */
const tokenSigningKey = z.looseObject({ kid: z.string().check(z.regex(/^[A-Za-z0-9._~-]{1,64}$/)) }).check(
  z.superRefine((jwk, context) => {
    const problem = tokenSigningKeyProblem(jwk);
    if (problem) context.addIssue({ code: 'custom', message: problem, input: '(not shown)' });
  }),
);

/** Why `jwk` cannot sign the gateway's tokens, or undefined. */
function tokenSigningKeyProblem(jwk: Record<string, unknown>): string | undefined {
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: jwk as JsonWebKey, format: 'jwk' });
  } catch {
    return 'must be a private key as a JWK (with "d")';
  }
  if (tokenSigningAlgorithm(jwk, key) === undefined) {
    return 'must be an EC P-256, Ed25519 or RSA (2048 bits at least) private key';
  }
  return undefined;
}

/** The algorithm a token signing key signs with (CONTRACT 4d's list), or undefined. */
export function tokenSigningAlgorithm(
  jwk: Readonly<Record<string, unknown>>,
  key: KeyObject = createPrivateKey({ key: jwk as JsonWebKey, format: 'jwk' }),
): 'ES256' | 'EdDSA' | 'RS256' | 'PS256' | undefined {
  const details = key.asymmetricKeyDetails;
  if (key.asymmetricKeyType === 'ec' && details?.namedCurve === 'prime256v1') return 'ES256';
  if (key.asymmetricKeyType === 'ed25519') return 'EdDSA';
  if (key.asymmetricKeyType === 'rsa' && (details?.modulusLength ?? 0) >= 2048)
    return jwk.alg === 'PS256' ? 'PS256' : 'RS256';
  return undefined;
}

/**
 * The registry document around its tenants; each tenant is checked on its own against `tenant`
 * (see parseRegistrySteps), so that a large registry can be checked a slice at a time.
 */
const registrySchema = z
  .strictObject({
    /**
     * The deployment's signing keys of `getDataPaginate`'s cursors and `getChanges`' sync tokens
     * (CONTRACT 4a, 4b), newest first: the first signs, any verifies (rotation: put a new key
     * first, drop the old one once what it signed may lapse). Secrets of their own, used as they
     * are: never derived from anything else. Without one, pages link by `fromRow`, and no tenant
     * may list `changeFeed` tables (its sync tokens need a key).
     */
    pagingCursorKeys: z.optional(z.array(signingKey).check(z.minLength(1), z.maxLength(10))),
    /** One signing key: the older form of `pagingCursorKeys`. */
    pagingCursorKey: z.optional(signingKey),
    /**
     * The private keys of the gateway's token endpoint (CONTRACT 4d), newest first: the first signs,
     * every one is published at `/{tenant}/.well-known/jwks.json` (rotation: put a new key first,
     * drop the old one once the tokens it signed have expired).
     */
    tokenSigningKeys: z.optional(
      z.array(tokenSigningKey).check(
        z.minLength(1),
        z.maxLength(5),
        z.refine((keys) => new Set(keys.map((key) => key.kid)).size === keys.length, {
          error: 'each kid once',
        }),
      ),
    ),
    tenants: z.record(z.string().check(z.regex(/^[a-z0-9][a-z0-9-]{0,62}$/)), z.unknown()),
  })
  .check(
    z.refine(
      (registry) => registry.pagingCursorKey === undefined || registry.pagingCursorKeys === undefined,
      {
        error: 'give the signing keys once: pagingCursorKeys (newest first), not pagingCursorKey beside it',
        path: ['pagingCursorKey'],
      },
    ),
  );

export type DatabaseConnection = z.infer<typeof connection>;
export type TenantConfig = z.infer<typeof tenant> & {
  readonly id: string;
  /**
   * The deployment's signing keys of cursors and sync tokens, newest first (the registry's
   * `pagingCursorKeys`); empty when it has none.
   */
  readonly signingKeys: readonly string[];
  /** The deployment's token signing keys (private JWKs), newest first; empty when it has none. */
  readonly tokenSigningKeys: readonly Readonly<Record<string, unknown>>[];
};
export type WebApiSettings = z.infer<typeof webApiSettings>;

/** A tenant's `webApi` settings as the registry reads them (defaults filled in); throws on a bad one. */
export function parseWebApiSettings(value: unknown): WebApiSettings {
  return deepFreeze(webApiSettings.parse(value));
}

export interface TenantRegistry {
  get(id: string): TenantConfig | undefined;
  ids(): string[];
}

/** Validates a registry document; throws a ConfigurationError naming every bad setting. */
export function parseTenantRegistry(document: unknown): TenantRegistry {
  const steps = parseRegistrySteps(document);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * As {@link parseTenantRegistry}, giving the event loop back between slices of tenants: how a
 * registry read again while requests are served is checked (a 10 MB registry takes about a
 * second of checking, which requests would otherwise wait through).
 */
export async function parseTenantRegistryInSlices(document: unknown): Promise<TenantRegistry> {
  const steps = parseRegistrySteps(document);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** Tenants checked between two yields of {@link parseRegistrySteps}. */
const TENANTS_PER_SLICE = 100;

function* parseRegistrySteps(document: unknown): Generator<void, TenantRegistry> {
  const problems: string[] = [];
  const report = (prefix: readonly PropertyKey[], issues: readonly z.core.$ZodIssue[]) => {
    for (const issue of issues) {
      // A value of one of a union's shapes (the list of applications, not the ERP register's
      // object) is reported by that shape's own problems, with their paths, not as "invalid input".
      const fitting = issue.code === 'invalid_union' ? fittingBranch(issue.errors) : undefined;
      if (fitting) {
        report([...prefix, ...issue.path], fitting);
        continue;
      }
      const keys = 'keys' in issue && Array.isArray(issue.keys) ? ` (${issue.keys.join(', ')})` : '';
      problems.push(
        `${[...prefix, ...issue.path].map(String).join('.') || '(root)'}: ${issue.message}${keys}`,
      );
    }
  };
  const refuse = () => new ConfigurationError(`Invalid tenant registry: ${problems.join('; ')}`);
  // `__proto__` is a name JSON.parse keeps as a key but an object built from it by assignment takes
  // as its prototype: such a tenant (or setting) would vanish without a word. Refused by its path.
  // Here the registry's own level and the tenants' names; each tenant's settings with the tenant.
  const rawTenants = (document as { tenants?: unknown } | null)?.tenants;
  const outerPaths = [
    ...prototypeKeyPaths(document, '', [], 1),
    ...prototypeKeyPaths(rawTenants, 'tenants', [], 1),
  ];
  for (const path of outerPaths) problems.push(`${path}: "__proto__" is not allowed as a name`);
  const outer = registrySchema.safeParse(document);
  if (!outer.success) report([], outer.error.issues);
  if (problems.length > 0 || !outer.success) throw refuse();
  const { pagingCursorKey, pagingCursorKeys } = outer.data;
  const signingKeys = pagingCursorKeys ?? (pagingCursorKey ? [pagingCursorKey] : []);
  const tokenSigningKeys = outer.data.tokenSigningKeys ?? [];
  const tenants = new Map<string, TenantConfig>();
  let inSlice = 0;
  for (const [id, raw] of Object.entries(outer.data.tenants)) {
    for (const path of prototypeKeyPaths(raw, `tenants.${id}`))
      problems.push(`${path}: "__proto__" is not allowed as a name`);
    const parsed = tenant.safeParse(raw);
    const feedProblems = parsed.success ? changeFeedProblems(id, parsed.data) : [];
    if (!parsed.success) report(['tenants', id], parsed.error.issues);
    else if (feedProblems.length > 0) problems.push(...feedProblems);
    else if (parsed.data.changeFeed.length > 0 && signingKeys.length === 0) {
      problems.push(
        `tenants.${id}.changeFeed: needs the registry's pagingCursorKeys (at least 32 characters of secret each), which sign the sync tokens`,
      );
    } else if (parsed.data.oauthClients.length > 0 && tokenSigningKeys.length === 0) {
      problems.push(
        `tenants.${id}.oauthClients: needs the registry's tokenSigningKeys (private JWKs), which sign the tokens`,
      );
    } else tenants.set(id, deepFreeze({ ...parsed.data, id, signingKeys, tokenSigningKeys }));
    if (++inSlice === TENANTS_PER_SLICE) {
      inSlice = 0;
      yield;
    }
  }
  problems.push(...sharedDatabaseProblems(tenants));
  if (problems.length > 0) throw refuse();
  return Object.freeze({
    get: (id: string) => tenants.get(id),
    ids: () => [...tenants.keys()],
  });
}

/**
 * Of a union's branches' issues, those of the one branch the value has the shape of: the only
 * branch not refused for the value's type as a whole. Undefined when none or several are.
 */
function fittingBranch(branches: readonly (readonly z.core.$ZodIssue[])[]): z.core.$ZodIssue[] | undefined {
  const fitting = branches.filter(
    (issues) => !issues.some((issue) => issue.path.length === 0 && issue.code === 'invalid_type'),
  );
  return fitting.length === 1 ? [...fitting[0]!] : undefined;
}

/**
 * Which database a connection reaches, as far as its settings tell: tenants whose connections give
 * the same one share its journal (CONTRACT.md section 2: an ERP hosting several companies).
 */
function databaseIdentity(connection: DatabaseConnection): string {
  if (connection.kind === 'embedded') return `embedded:${connection.name}`;
  const text = connection.connectionString.trim();
  try {
    if (/^(mssql|sqlserver):\/\//i.test(text)) {
      const url = new URL(text);
      return `mssql:${url.hostname}:${url.port || '1433'}/${decodeURIComponent(url.pathname.slice(1))}`.toLowerCase();
    }
    // The driver's own parser, as connection-security.ts reads the string.
    const keywords = parseConnectionString(text);
    const get = (name: string) => String(keywords.get(name) ?? '').toLowerCase();
    const server = (get('server') || get('data source') || get('address') || get('addr')).replace(
      /^tcp:/,
      '',
    );
    return `mssql:${server}/${get('database') || get('initial catalog')}`;
  } catch {
    return `mssql:${text}`;
  }
}

/**
 * Registry applications of tenants that share a database must have ids of their own: the journal
 * (`WS_JOURNAL.APPLICATION_ID`) and the replay guard are the database's, and 997 answers an
 * application its own calls by id alone. One application listed by several of them (the same id
 * and key: one integrator of several companies of one ERP) is one application.
 */
function sharedDatabaseProblems(tenants: ReadonlyMap<string, TenantConfig>): string[] {
  const problems: string[] = [];
  const owners = new Map<string, Map<number, { tenant: string; apiKey: string }>>();
  for (const [id, config] of tenants) {
    const applications = config.webApi.applications;
    if (!Array.isArray(applications)) continue;
    const database = databaseIdentity(config.database);
    const ids = owners.get(database) ?? new Map<number, { tenant: string; apiKey: string }>();
    owners.set(database, ids);
    for (const [index, application] of applications.entries()) {
      const other = ids.get(application.id);
      if (other === undefined) ids.set(application.id, { tenant: id, apiKey: application.apiKey });
      else if (other.tenant !== id && other.apiKey !== application.apiKey) {
        problems.push(
          `tenants.${id}.webApi.applications.${index}.id: ${application.id} is also the id of another application ` +
            `of tenant ${other.tenant}, which shares its database: tenants on one database give their applications ` +
            'ids of their own (the journal, WS_JOURNAL.APPLICATION_ID, tells them apart, and 997 by it)',
        );
      }
    }
  }
  return problems;
}

/** The paths of every own `__proto__` key in `value` (a parsed JSON document), `depth` levels deep at most. */
function prototypeKeyPaths(
  value: unknown,
  path = '',
  into: string[] = [],
  depth = Number.POSITIVE_INFINITY,
): string[] {
  if (value && typeof value === 'object' && depth > 0) {
    for (const key of Object.keys(value)) {
      const inner = path ? `${path}.${key}` : key;
      if (key === '__proto__') into.push(inner);
      else prototypeKeyPaths((value as Record<string, unknown>)[key], inner, into, depth - 1);
    }
  }
  return into;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
