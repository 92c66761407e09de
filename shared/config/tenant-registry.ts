/**
 * The tenant registry of this process: read from its source when first needed, kept in memory,
 * read again in the background once older than its max age and early for a tenant it does not
 * know; a tenant is looked up here. What a registry must hold is tenants.ts's; where it is read
 * from, shared/adapters/registry-sources/: one module per source, each imported only where it is
 * the one set, so that a function loads the client of its source and never the other's.
 */
import { processWide } from '../core/process-wide.js';
import { atMost } from '../core/time-limit.js';
import { ConfigurationError, getSettings } from './settings.js';
import {
  parseTenantRegistry,
  parseTenantRegistryInSlices,
  type TenantConfig,
  type TenantRegistry,
} from './tenants.js';

/** Where the process's registry stands (one per process, see process-wide.ts). */
interface RegistryState {
  /** The last good registry. */
  current?: TenantRegistry;
  /** When it was read (ms); a registry set by `setTenantRegistry` never ages. */
  readAt: number;
  fixed: boolean;
  /** The read in flight, shared by every request that needs it. */
  reading?: Promise<TenantRegistry>;
  /** Whether requests wait for {@link reading}: it was begun for a copy too old to answer with. */
  readingAwaited?: boolean;
  /** The last read an unknown tenant asked for (ms). */
  earlyReadAt: number;
  /** The text of the last read, so an unchanged document is not parsed again. */
  text?: string;
  /** Where the local stack reads its registry from instead of the environment's source. */
  source?: () => Promise<unknown>;
}

/** One per process (see process-wide.ts): the local stack's registry reaches its packaged functions. */
const state = processWide<RegistryState>('tenant-registry', () => ({
  readAt: 0,
  fixed: false,
  earlyReadAt: 0,
}));

/** Who hears that a re-read was refused (the registry in force stays). */
export interface RegistryProblemLog {
  error(message: string, fields?: Record<string, unknown>): void;
}

/**
 * How often an unknown tenant may make this process read the registry before its time: a tenant
 * added a moment ago is served at once, and a flood of unknown tenants costs at most one read per
 * this many ms.
 */
export const EARLY_READ_INTERVAL_MS = 1000;

/**
 * The tenant registry of this process, read from `TENANT_REGISTRY_FILE` (a JSON file),
 * `TENANT_REGISTRY_SECRET_ID` (Secrets Manager) or `TENANT_REGISTRY_PARAMETER` (an SSM
 * SecureString), and read again once it is older than `TENANT_REGISTRY_MAX_AGE_SECONDS`. An
 * instance in use reads it again in the background: the one in memory is answered meanwhile (no
 * read, no await of anything but itself), so none of its requests waits for a re-read. A copy
 * older than twice the max age (an instance that sat idle, frozen between invocations, for that
 * long) is not answered: its request waits for the new read, so that a password or application
 * withdrawn long ago is never let in once more by an instance that wakes up. A read that fails or
 * that does not validate keeps the registry in force and is reported to `log` with the setting's
 * path; only the very first read of a process fails the request.
 */
export function loadTenantRegistry(log?: RegistryProblemLog): Promise<TenantRegistry> {
  const maxAgeMs = getSettings().tenantRegistryMaxAgeSeconds * 1000;
  if (state.current) {
    const age = Date.now() - state.readAt;
    if (state.fixed || age < maxAgeMs) return Promise.resolve(state.current);
    // Past its age the registry is read again beside the requests, not in their way: they go on
    // with the one in force until the new one is read and validated (a large registry takes
    // seconds to fetch and check). Past twice its age the copy is too old to answer with.
    // A read already under way for an instance in use stays beside its requests, however long
    // it takes (a large registry); one begun for a copy too old to answer with is awaited.
    if (state.reading) {
      return state.readingAwaited ? awaitedAtMost(state.reading, log) : Promise.resolve(state.current);
    }
    const tooOld = age >= STALE_AGE_FACTOR * maxAgeMs;
    const reading = readRegistry(log);
    state.readingAwaited = tooOld;
    if (tooOld) return awaitedAtMost(reading, log);
    void reading.catch(() => undefined);
    return Promise.resolve(state.current);
  }
  return readRegistry(log);
}

/**
 * How long a request waits for the read of a copy too old to answer with. A source that does not
 * answer by then (Secrets Manager unreachable) must not hold the request until its time-out: it is
 * answered from the copy in force, as when the read fails, and the read goes on beside it.
 */
export const STALE_READ_WAIT_MS = 3000;

function awaitedAtMost(reading: Promise<TenantRegistry>, log?: RegistryProblemLog): Promise<TenantRegistry> {
  return atMost(reading, STALE_READ_WAIT_MS, () => {
    log?.error(
      'tenant registry: the new read did not answer in time; the registry in force stays meanwhile',
      {
        waitedMs: STALE_READ_WAIT_MS,
        source: registrySourceName(),
      },
    );
    return state.current!;
  });
}

/**
 * How many max ages old a copy in memory may be and still answer while it is read again: an
 * instance that has a request at least once a max age never waits, one idle longer reads first.
 */
export const STALE_AGE_FACTOR = 2;

/**
 * The tenant `id`, reading the registry before its time (at most once per
 * {@link EARLY_READ_INTERVAL_MS}) when the one in force does not know it.
 */
export async function findTenant(id: string, log?: RegistryProblemLog): Promise<TenantConfig | undefined> {
  const known = (await loadTenantRegistry(log)).get(id);
  if (known || state.fixed || Date.now() - state.earlyReadAt < EARLY_READ_INTERVAL_MS) return known;
  state.earlyReadAt = Date.now();
  return (await readRegistry(log)).get(id);
}

function readRegistry(log: RegistryProblemLog | undefined): Promise<TenantRegistry> {
  if (state.reading) return state.reading;
  const reading = (async () => {
    try {
      const text = await (state.source ? state.source().then(JSON.stringify) : readRegistryText());
      if (state.current && text === state.text) {
        state.readAt = Date.now();
        return state.current;
      }
      let document: unknown;
      try {
        document = JSON.parse(text);
      } catch {
        throw new ConfigurationError('The tenant registry is not valid JSON');
      }
      // A first read is awaited by its request; a re-read is checked a slice at a time.
      const registry = state.current
        ? await parseTenantRegistryInSlices(document)
        : parseTenantRegistry(document);
      Object.assign(state, { current: registry, text, readAt: Date.now() });
      return registry;
    } catch (error) {
      if (!state.current) throw error;
      // Never half a registry: the last good one stays, and is not read again for a while.
      state.readAt = Date.now();
      log?.error('tenant registry: a new read was refused; the registry in force stays', {
        error: error instanceof Error ? error.message : String(error),
        source: registrySourceName(),
      });
      return state.current;
    } finally {
      state.reading = undefined;
    }
  })();
  state.reading = reading;
  state.readingAwaited = false;
  return reading;
}

/**
 * Replaces the process's registry with one that never ages (tests), or forgets it so that the next
 * request reads the registry's source again.
 */
export function setTenantRegistry(value: TenantRegistry | undefined): void {
  Object.assign(state, { current: value, fixed: value !== undefined, readAt: Date.now(), text: undefined });
}

/**
 * Reads the registry from `source` (the local stack: its file with the demo database filled in)
 * instead of the environment's setting, at the same pace; forgets the registry in force.
 */
export function useTenantRegistrySource(source: (() => Promise<unknown>) | undefined): void {
  Object.assign(state, { source, current: undefined, fixed: false, readAt: 0, text: undefined });
}

/** Where the registry is read from: the first of these settings that is set. */
const ENVIRONMENT_SOURCES = [
  {
    setting: 'TENANT_REGISTRY_FILE',
    load: () => import('../adapters/registry-sources/file.js'),
  },
  {
    setting: 'TENANT_REGISTRY_SECRET_ID',
    load: () => import('../adapters/registry-sources/secrets-manager.js'),
  },
  {
    setting: 'TENANT_REGISTRY_PARAMETER',
    load: () => import('../adapters/registry-sources/ssm-parameter.js'),
  },
] as const;

const environmentSource = () => ENVIRONMENT_SOURCES.find(({ setting }) => process.env[setting]);

function registrySourceName(): string {
  if (state.source) return 'local stack';
  return environmentSource()?.setting ?? '(none set)';
}

/** The registry document's text, read anew from the source the environment names. */
async function readRegistryText(): Promise<string> {
  const source = environmentSource();
  if (!source) {
    throw new ConfigurationError(
      'TENANT_REGISTRY_FILE, TENANT_REGISTRY_SECRET_ID or TENANT_REGISTRY_PARAMETER must be set',
    );
  }
  const text: unknown = await (await source.load()).readRegistry(process.env[source.setting]!);
  if (typeof text !== 'string' || !text) throw new ConfigurationError('The tenant registry is empty');
  return text;
}
