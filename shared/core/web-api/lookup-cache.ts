import { createHash } from 'node:crypto';
import type { Application, Operation, WebApiStore } from './store.js';

/**
 * Operations of one tenant database (and applications, where a tenant reads them from the ERP's
 * register instead of the registry), remembered by a warm process for a short time so that a
 * signed call does not look them up in the database every time. The price: a change to
 * `WS_OPERATION` or to the ERP's `WS_APPLICATION` (an operation switched off or pointed at another
 * procedure, a key deactivated) takes effect within `ttlMs`, not at once. Lookups that find
 * nothing are not remembered, so a new key or operation works at once.
 */
export class WebApiLookupCache {
  private readonly applications = new Map<string, Entry<Application | undefined>>();
  private readonly operations = new Map<number, Entry<Operation | undefined>>();

  constructor(
    /** How long an entry is used; 0 turns the cache off. */
    readonly ttlMs: number,
    private readonly maxEntries = 1000,
    private readonly now: () => number = Date.now,
  ) {}

  /** The application of a key, from the cache while fresh, else from `load`. */
  application(apiKey: string, load: () => Promise<Application | undefined>) {
    // Keyed by a digest, so that the key itself is neither kept nor compared as it is.
    const digest = createHash('sha256').update(apiKey, 'utf8').digest('base64');
    return this.lookup(this.applications, digest, load);
  }

  operation(vltyp: number, load: () => Promise<Operation | undefined>) {
    return this.lookup(this.operations, vltyp, load);
  }

  /** Forgets everything (e.g. after an administrator changed the tables and wants it now). */
  clear(): void {
    this.applications.clear();
    this.operations.clear();
  }

  private lookup<K, V>(map: Map<K, Entry<V | undefined>>, key: K, load: () => Promise<V | undefined>) {
    if (this.ttlMs <= 0) return load();
    const now = this.now();
    const cached = map.get(key);
    if (cached && cached.expires > now) return cached.value;
    if (cached) map.delete(key);
    // The promise is kept, so that calls arriving together share one database lookup.
    const value = load().then((found) => {
      if (found === undefined && map.get(key)?.value === value) map.delete(key);
      return found;
    });
    value.catch(() => {
      if (map.get(key)?.value === value) map.delete(key);
    });
    if (map.size >= this.maxEntries) map.delete(map.keys().next().value as K);
    map.set(key, { value, expires: now + this.ttlMs });
    return value;
  }
}

interface Entry<V> {
  readonly value: Promise<V>;
  readonly expires: number;
}

/** The store with its application and operation lookups going through `cache`. */
export function withLookupCache(store: WebApiStore, cache: WebApiLookupCache): WebApiStore {
  return {
    ...store,
    findApplication: (apiKey) => cache.application(apiKey, () => store.findApplication(apiKey)),
    findOperation: (vltyp) => cache.operation(vltyp, () => store.findOperation(vltyp)),
  };
}
