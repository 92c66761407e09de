/**
 * Fair share between tenants (CONTRACT.md section 2): per tenant, across every instance of every
 * HTTP function, at most `concurrentRequests` requests in progress and `requestsPerSecond` requests
 * a second (bursts of twice that). The counts live in a store every instance shares (the
 * `TenantLoadStore` port); this module decides, and refuses what it can prove over a limit without
 * asking the store at all.
 *
 * The rate is a GCRA (generic cell rate algorithm, the token bucket written as one time stamp): the
 * store keeps per tenant the "theoretical arrival time" `tat`; a request is admitted when, after it,
 * `tat` stays within `burst × interval` of now. Refused requests spend nothing.
 */

export interface TenantLimits {
  /** Requests of the tenant in progress at once, across every instance. */
  readonly concurrentRequests: number;
  /** Requests per second, sustained; bursts may reach `BURST_FACTOR` times this at once. */
  readonly requestsPerSecond: number;
}

/** A burst may hold this many seconds' worth of the rate (CONTRACT: "bursts of twice that"). */
export const BURST_FACTOR = 2;

/** What the store holds for one tenant. */
export interface TenantLoad {
  /** Requests in progress: slot id → when the slot lapses on its own (ms since the epoch). */
  readonly slots: ReadonlyMap<string, number>;
  /** The rate's theoretical arrival time (ms since the epoch); undefined before the first request. */
  readonly tat: number | undefined;
}

/** One conditional write: take a slot and the rate's next cell, or neither. */
export interface TakeRequest {
  readonly tenant: string;
  readonly slotId: string;
  /** When the slot lapses if nobody gives it back (the invocation's own end). */
  readonly slotExpiresAt: number;
  readonly concurrentRequests: number;
  readonly now: number;
  /** The rate's emission interval (ms). */
  readonly interval: number;
  /** The latest `tat` that still admits a request. */
  readonly latestTat: number;
  /**
   * Which of the two writes to try: `idle` (tat ≤ busyFloor: tat becomes now + interval) or
   * `busy` (busyFloor < tat ≤ latestTat: tat grows by interval). A store cannot take the larger of two values
   * in one conditional write, so the caller guesses from what it saw last and tries the other on a
   * conflict.
   */
  readonly branch: 'idle' | 'busy';
  /** `now` less `RESYNC_MS`: a `tat` at or below it is idle, above it busy. */
  readonly busyFloor: number;
  /**
   * A slot of the same tenant this process is giving back right now (its answer has left, its
   * release is on its way): taken over in the same write, so that the request after an answer
   * does not meet its predecessor's slot. Removing it is harmless if the release came first.
   */
  readonly handover?: string;
}

/**
 * How far behind now the rate's `tat` may lag and still grow by an interval rather than start
 * again at now. Without it, requests that arrive together at a high rate miss each other's
 * branch (one write moves `tat` just past the others' `now`) and retry in turns; with it, a busy
 * tenant's writes all take the busy branch. The price: up to `RESYNC_MS` of unused rate can be
 * spent later, 5 % of the burst (`BURST_FACTOR` seconds' worth) at most.
 */
export const RESYNC_MS = 100;

export type TakeResult =
  | { readonly taken: true; readonly tat: number }
  /** The condition did not hold; `load` is the state that made it fail, where the store tells it. */
  | { readonly taken: false; readonly load?: TenantLoad };

/** The shared store of every tenant's load (DynamoDB in AWS, dynalite locally). */
export interface TenantLoadStore {
  take(request: TakeRequest): Promise<TakeResult>;
  /** The tenant's load as it stands (a strongly consistent read); undefined when there is none yet. */
  read(tenant: string): Promise<TenantLoad | undefined>;
  /** Makes the tenant's empty record, unless it exists. */
  prepare(tenant: string): Promise<void>;
  /** Removes slots that lapsed (each only if it still lapses at the time given). */
  removeLapsed(tenant: string, lapsed: ReadonlyMap<string, number>): Promise<void>;
  /** Gives a slot back. */
  release(tenant: string, slotId: string): Promise<void>;
}

export type Refusal = {
  readonly admitted: false;
  /** Which limit refused: requests in progress, or requests per second. */
  readonly limit: 'concurrency' | 'rate';
  readonly retryAfterSeconds: number;
  /** Whether the instance knew without asking the store. */
  readonly local: boolean;
};
export type Admission = {
  readonly admitted: true;
  /** Gives the slot back; safe to call more than once. */
  readonly release: () => Promise<void>;
};

/**
 * How long an instance that found a tenant's requests in progress at its limit in the store
 * refuses that tenant's next requests without asking again (each answered Retry-After 1 s). A
 * tenant flooding past its share then costs the store at most one write per instance per this
 * time; a slot given back meanwhile is found by the next request after it.
 */
export const CONCURRENCY_MEMORY_MS = 100;

/**
 * The branch of a write at `now` for a tenant whose `tat` was last seen as `tat`: busy while that
 * is within RESYNC_MS of now (the write's `busyFloor`), idle otherwise or when none was seen.
 */
const branchOf = (tat: number | undefined, now: number): TakeRequest['branch'] =>
  tat !== undefined && tat > now - RESYNC_MS ? 'busy' : 'idle';

/** Attempts of the conditional write before a request that kept meeting others' writes is refused. */
const MAX_ATTEMPTS = 10;
/**
 * Longest pause (ms) before another attempt after a write lost a race: a random part of 1, 2, 4 …
 * up to this, so that writers that met once spread out instead of meeting again (16 requests of
 * one tenant at once on a loaded machine used up six attempts without a pause).
 */
const MAX_BACKOFF_MS = 25;

/** The rate's emission interval and the latest `tat` that admits a request at `now`. */
export function rateWindow(limits: TenantLimits, now: number): { interval: number; latestTat: number } {
  const interval = 1000 / limits.requestsPerSecond;
  const burst = limits.requestsPerSecond * BURST_FACTOR;
  return { interval, latestTat: now + (burst - 1) * interval };
}

/** Seconds until the rate admits a request again, given the tenant's `tat` (at least 1). */
export function rateRetryAfterSeconds(limits: TenantLimits, tat: number, now: number): number {
  return Math.max(1, Math.ceil((tat - rateWindow(limits, now).latestTat) / 1000));
}

/**
 * Admits or refuses a tenant's requests. One instance per process: it remembers, per tenant, the
 * last `tat` it saw, which only ever grows, so a remembered `tat` past the latest admissible one
 * proves a refusal without a round trip (a tenant flooding one instance is refused there).
 */
export class TenantAdmission {
  private readonly knownTat = new Map<string, number>();
  /** Until when, per tenant, this process knows its requests in progress to be at the limit. */
  private readonly knownFull = new Map<string, number>();
  /** The slots this process holds now, per tenant (slot id → lapse time). */
  private readonly held = new Map<string, Map<string, number>>();
  /** Slots of `held` whose release is on its way, per tenant: the next request may take one over. */
  private readonly givingBack = new Map<string, Set<string>>();
  /** Requests of each tenant this process is asking the store to admit right now. */
  private readonly asking = new Map<string, number>();

  constructor(
    private readonly store: TenantLoadStore,
    private readonly newSlotId: () => string,
    private readonly clock: () => number = Date.now,
    private readonly pause: (ms: number) => Promise<void> = (ms) =>
      new Promise((resolve) => setTimeout(resolve, ms)),
  ) {}

  async admit(tenant: string, limits: TenantLimits, slotExpiresAt: number): Promise<Admission | Refusal> {
    const known = this.knownTat.get(tenant);
    const start = this.clock();
    if (known !== undefined && known > rateWindow(limits, start).latestTat) {
      return {
        admitted: false,
        limit: 'rate',
        retryAfterSeconds: rateRetryAfterSeconds(limits, known, start),
        local: true,
      };
    }
    // A slot of this tenant on its way back is taken over rather than waited for.
    const handover = this.takeOverGivenBack(tenant);
    if (handover === undefined) {
      const fullUntil = this.knownFull.get(tenant);
      if (fullUntil !== undefined && fullUntil > start) {
        return { admitted: false, limit: 'concurrency', retryAfterSeconds: 1, local: true };
      }
      // Requests this process holds slots for, or is asking the store about, are in progress for
      // sure: when they alone fill the tenant's share, the answer is known without the store (a
      // process serving many requests at once, as the local stack does; a Lambda instance serves
      // one at a time).
      let live = this.asking.get(tenant) ?? 0;
      for (const expiresAt of this.held.get(tenant)?.values() ?? []) if (expiresAt > start) live++;
      if (live >= limits.concurrentRequests) {
        return { admitted: false, limit: 'concurrency', retryAfterSeconds: 1, local: true };
      }
    }
    this.asking.set(tenant, (this.asking.get(tenant) ?? 0) + 1);
    try {
      return await this.ask(tenant, limits, slotExpiresAt, known, handover);
    } finally {
      const left = (this.asking.get(tenant) ?? 1) - 1;
      if (left > 0) this.asking.set(tenant, left);
      else this.asking.delete(tenant);
    }
  }

  /** Asks the store: one conditional write, again while it lost a race. */
  private async ask(
    tenant: string,
    limits: TenantLimits,
    slotExpiresAt: number,
    known: number | undefined,
    handover: string | undefined,
  ): Promise<Admission | Refusal> {
    const slotId = this.newSlotId();
    /** The tenant's `tat` as last seen (this process's memory, then each refused write's item). */
    let lastTat = known;
    /** Which limit the other writes were racing for, as the last read showed. */
    let contended: Refusal['limit'] = 'concurrency';
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const now = this.clock();
      const { interval, latestTat } = rateWindow(limits, now);
      // The branch by the same clock as the write's `busyFloor`: chosen by the time of the last
      // read instead, a pause (or a starved event loop) longer than RESYNC_MS between the two made
      // every attempt take the branch the item no longer fits, until the attempts ran out.
      const branch = branchOf(lastTat, now);
      let result: TakeResult;
      try {
        result = await this.store.take({
          tenant,
          slotId,
          slotExpiresAt,
          concurrentRequests: limits.concurrentRequests,
          now,
          interval,
          latestTat,
          branch,
          busyFloor: now - RESYNC_MS,
          ...(handover === undefined ? {} : { handover }),
        });
      } catch (error) {
        // The write may have reached the store though its answer did not: give back what it may
        // have taken (removing a slot that is not there changes nothing), then let the caller decide.
        await this.store.release(tenant, slotId).catch(() => undefined);
        throw error;
      }
      if (result.taken) {
        this.remember(tenant, result.tat);
        this.knownFull.delete(tenant);
        const slots = this.held.get(tenant) ?? new Map<string, number>();
        this.held.set(tenant, slots);
        slots.set(slotId, slotExpiresAt);
        return { admitted: true, release: this.releaser(tenant, slotId) };
      }
      const load = result.load ?? (await this.store.read(tenant));
      if (!load) {
        await this.store.prepare(tenant);
        continue;
      }
      if (load.tat !== undefined) this.remember(tenant, load.tat);
      const lapsed = new Map([...load.slots].filter(([, expiresAt]) => expiresAt <= now));
      const handedOver = handover !== undefined && load.slots.has(handover) ? 1 : 0;
      if (load.slots.size - lapsed.size - handedOver >= limits.concurrentRequests) {
        if (lapsed.size === 0) this.knownFull.set(tenant, now + CONCURRENCY_MEMORY_MS);
        return { admitted: false, limit: 'concurrency', retryAfterSeconds: 1, local: false };
      }
      if (load.tat !== undefined && load.tat > latestTat) {
        return {
          admitted: false,
          limit: 'rate',
          retryAfterSeconds: rateRetryAfterSeconds(limits, load.tat, now),
          local: false,
        };
      }
      // Slots of instances that ended without giving them back (a crash, a time-out) count until
      // they lapse; once the tenant is at its limit, lapsed ones make room.
      if (lapsed.size > 0 && load.slots.size - handedOver >= limits.concurrentRequests) {
        await this.store.removeLapsed(tenant, lapsed);
      }
      if (load.tat !== undefined) lastTat = load.tat;
      contended =
        load.slots.size - lapsed.size >= limits.concurrentRequests - 1 || branchOf(lastTat, now) === 'idle'
          ? 'concurrency'
          : 'rate';
      if (attempt < MAX_ATTEMPTS - 1)
        await this.pause(Math.random() * Math.min(MAX_BACKOFF_MS, 2 ** attempt));
    }
    // Other instances' writes won every attempt: the tenant is as busy as it may be.
    return { admitted: false, limit: contended, retryAfterSeconds: 1, local: false };
  }

  private remember(tenant: string, tat: number): void {
    if (tat > (this.knownTat.get(tenant) ?? Number.NEGATIVE_INFINITY)) this.knownTat.set(tenant, tat);
  }

  /** A slot of `tenant` whose release is on its way, now the caller's to take over (at most once). */
  private takeOverGivenBack(tenant: string): string | undefined {
    const giving = this.givingBack.get(tenant);
    const first = giving?.values().next();
    if (!giving || !first || first.done) return undefined;
    giving.delete(first.value);
    if (giving.size === 0) this.givingBack.delete(tenant);
    this.held.get(tenant)?.delete(first.value);
    return first.value;
  }

  private releaser(tenant: string, slotId: string): () => Promise<void> {
    let released: Promise<void> | undefined;
    return () => {
      if (released) return released;
      const giving = this.givingBack.get(tenant) ?? new Set<string>();
      this.givingBack.set(tenant, giving);
      giving.add(slotId);
      released = this.store.release(tenant, slotId).finally(() => {
        const still = this.givingBack.get(tenant);
        still?.delete(slotId);
        if (still?.size === 0) this.givingBack.delete(tenant);
        const slots = this.held.get(tenant);
        slots?.delete(slotId);
        if (slots?.size === 0) this.held.delete(tenant);
      });
      return released;
    };
  }
}

/**
 * The `RateLimit-Policy` field (IETF httpapi-ratelimit-headers, draft 10): the rate as a quota of
 * a burst's worth of requests per `BURST_FACTOR` seconds, and the requests in progress.
 */
export function rateLimitPolicyField(limits: TenantLimits): string {
  return (
    `"rate";q=${limits.requestsPerSecond * BURST_FACTOR};w=${BURST_FACTOR}, ` +
    `"concurrency";q=${limits.concurrentRequests};qu="concurrent-requests"`
  );
}

/** The `RateLimit` field of a refusal: nothing left of the limit that refused, and when there will be. */
export function rateLimitField(refusal: Refusal): string {
  return `"${refusal.limit}";r=0;t=${refusal.retryAfterSeconds}`;
}
