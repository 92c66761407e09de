import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_TENANT_LIMITS_TABLE, startDynalite } from '../../infra/local/aws-emulator.js';
import { DynamoDbJsonClient } from '../../shared/adapters/dynamodb/json-client.js';
import { DynamoDbTenantLoadStore } from '../../shared/adapters/dynamodb/tenant-load-store.js';
import { InProcessTenantLoadStore } from '../../shared/adapters/memory/tenant-load-store.js';
import {
  type Admission,
  CONCURRENCY_MEMORY_MS,
  TenantAdmission,
  type TenantLoadStore,
} from '../../shared/core/tenant-limits.js';

/**
 * The fair-share limiter against the store every Lambda instance shares (DynamoDB's wire protocol,
 * dynalite), several "instances" (TenantAdmission objects, each with its own memory) interleaved:
 * never more than the limit in progress, the rate's burst and refill, slots of a crashed instance
 * lapsing, a store that is late.
 */

let dynamo: Awaited<ReturnType<typeof startDynalite>>;
let client: DynamoDbJsonClient;
beforeAll(async () => {
  dynamo = await startDynalite();
  client = new DynamoDbJsonClient({
    endpoint: dynamo.endpoint,
    region: 'eu-central-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
});
afterAll(async () => {
  client?.destroy();
  await dynamo?.stop();
});

const stores: Record<string, () => TenantLoadStore> = {
  dynalite: () => new DynamoDbTenantLoadStore(client, LOCAL_TENANT_LIMITS_TABLE, 2000),
  'in-process': () => new InProcessTenantLoadStore(),
};

/** The store, counting the conditional writes asked of it. */
function countingTakes(real: TenantLoadStore): { store: TenantLoadStore; takes: () => number } {
  let takes = 0;
  const store: TenantLoadStore = {
    take: (request) => {
      takes++;
      return real.take(request);
    },
    read: (tenant) => real.read(tenant),
    prepare: (tenant) => real.prepare(tenant),
    removeLapsed: (tenant, lapsed) => real.removeLapsed(tenant, lapsed),
    release: (tenant, slotId) => real.release(tenant, slotId),
  };
  return { store, takes: () => takes };
}

/** A clock the test moves. */
function manualClock(start = 1_800_000_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

for (const [name, makeStore] of Object.entries(stores)) {
  describe(`tenant limits on the ${name} store`, () => {
    it('never lets more than the limit be in progress, across instances interleaved at random', async () => {
      const seed = Number(process.env.TENANT_LIMITS_SEED ?? Math.floor(Math.random() * 2 ** 31));
      console.log(`tenant limits: seed ${seed} (TENANT_LIMITS_SEED=${seed} replays it)`);
      const store = makeStore();
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.record({ instance: fc.nat(2), admit: fc.boolean(), index: fc.nat(20) }), {
            minLength: 10,
            maxLength: 60,
          }),
          fc.integer({ min: 1, max: 5 }),
          async (steps, limit) => {
            const tenant = `t-${randomUUID()}`;
            const clock = manualClock();
            const instances = [0, 1, 2].map(() => new TenantAdmission(store, randomUUID, clock.now));
            const held: Admission[] = [];
            for (const step of steps) {
              clock.advance(1000); // the rate never refuses here: only concurrency
              if (step.admit || held.length === 0) {
                const decision = await instances[step.instance]!.admit(
                  tenant,
                  { concurrentRequests: limit, requestsPerSecond: 1000 },
                  clock.now() + 60_000,
                );
                // Refused exactly when the limit is reached, admitted otherwise.
                expect(decision.admitted, `held ${held.length} of ${limit}`).toBe(held.length < limit);
                if (decision.admitted) held.push(decision);
                else expect(decision.limit).toBe('concurrency');
              } else {
                const [released] = held.splice(step.index % held.length, 1);
                await released!.release();
              }
              const load = await store.read(tenant);
              expect(load?.slots.size ?? 0).toBe(held.length);
            }
            for (const admission of held) await admission.release();
            expect((await store.read(tenant))?.slots.size ?? 0).toBe(0);
          },
        ),
        { seed, numRuns: name === 'dynalite' ? 15 : 60 },
      );
    }, 120_000);

    it('admits at most the limit of many requests at once from several instances', async () => {
      const store = makeStore();
      const tenant = `t-${randomUUID()}`;
      const instances = [0, 1, 2, 3].map(() => new TenantAdmission(store, randomUUID));
      const decisions = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          instances[i % 4]!.admit(
            tenant,
            { concurrentRequests: 8, requestsPerSecond: 1000 },
            Date.now() + 60_000,
          ),
        ),
      );
      const admitted = decisions.filter((decision): decision is Admission => decision.admitted);
      expect(admitted.length).toBeGreaterThan(0);
      expect(admitted.length).toBeLessThanOrEqual(8);
      expect((await store.read(tenant))?.slots.size).toBe(admitted.length);
      await Promise.all(admitted.map((admission) => admission.release()));
      expect((await store.read(tenant))?.slots.size).toBe(0);
    });

    it('admits a burst of twice the rate at once, then one request per interval', async () => {
      const store = makeStore();
      const tenant = `t-${randomUUID()}`;
      const clock = manualClock();
      const [one, two] = [0, 1].map(() => new TenantAdmission(store, randomUUID, clock.now));
      const limits = { concurrentRequests: 1000, requestsPerSecond: 10 };
      const admitOn = async (instance: TenantAdmission) => {
        const decision = await instance.admit(tenant, limits, clock.now() + 60_000);
        if (decision.admitted) await decision.release();
        return decision;
      };
      for (let i = 0; i < 20; i++)
        expect((await admitOn(i % 2 ? one! : two!)).admitted, `request ${i}`).toBe(true);
      const refused = await admitOn(one!);
      expect(refused).toMatchObject({ admitted: false, limit: 'rate', retryAfterSeconds: 1 });
      // The instance that saw the refusal knows without asking; the other asks and is refused too.
      expect(await admitOn(one!)).toMatchObject({ admitted: false, local: true });
      expect(await admitOn(two!)).toMatchObject({ admitted: false, limit: 'rate' });
      clock.advance(100); // one interval at 10/s
      expect((await admitOn(two!)).admitted).toBe(true);
      expect((await admitOn(one!)).admitted).toBe(false);
      clock.advance(2000); // a whole burst again
      for (let i = 0; i < 20; i++) expect((await admitOn(one!)).admitted, `after the pause ${i}`).toBe(true);
      expect((await admitOn(two!)).admitted).toBe(false);
    });

    for (const order of ['take first', 'release first'] as const) {
      it(`lets the request after an answer take over the slot on its way back (${order}), never more than the limit`, async () => {
        const real = makeStore();
        // The releases of this process wait until the test lets them go: the write that gives a
        // slot back and the next request's take meet in the order under test.
        const gates: (() => void)[] = [];
        const store: TenantLoadStore = {
          take: (request) => real.take(request),
          read: (tenant) => real.read(tenant),
          prepare: (tenant) => real.prepare(tenant),
          removeLapsed: (tenant, lapsed) => real.removeLapsed(tenant, lapsed),
          release: async (tenant, slotId) => {
            await new Promise<void>((resolve) => gates.push(resolve));
            await real.release(tenant, slotId);
          },
        };
        const tenant = `t-${randomUUID()}`;
        const limits = { concurrentRequests: 2, requestsPerSecond: 1000 };
        const instance = new TenantAdmission(store, randomUUID);
        const other = new TenantAdmission(real, randomUUID);
        const first = await instance.admit(tenant, limits, Date.now() + 60_000);
        const second = await other.admit(tenant, limits, Date.now() + 60_000);
        expect([first.admitted, second.admitted]).toEqual([true, true]);
        // The first answer has left: its slot is on its way back.
        const releasing = (first as Admission).release();
        await new Promise((resolve) => setTimeout(resolve, 10));
        if (order === 'release first') {
          gates.shift()!();
          await releasing;
        }
        const next = await instance.admit(tenant, limits, Date.now() + 60_000);
        expect(next.admitted).toBe(true);
        expect((await real.read(tenant))?.slots.size).toBe(2);
        // Nobody else fits meanwhile: the handed-over slot was not counted twice.
        expect(await other.admit(tenant, limits, Date.now() + 60_000)).toMatchObject({
          admitted: false,
          limit: 'concurrency',
        });
        if (order === 'take first') {
          gates.shift()!();
          await releasing;
        }
        expect((await real.read(tenant))?.slots.size).toBe(2);
        const releases = [(next as Admission).release(), (second as Admission).release()];
        while (gates.length > 0) gates.shift()!();
        await Promise.all(releases);
        expect((await real.read(tenant))?.slots.size ?? 0).toBe(0);
      });
    }

    it("refuses at once, without the store, what this process's own requests in progress already fill", async () => {
      const real = makeStore();
      const { store: counting, takes } = countingTakes(real);
      const tenant = `t-${randomUUID()}`;
      await real.prepare(tenant);
      const instance = new TenantAdmission(counting, randomUUID);
      // Twelve at once in one process (the local stack's instances) over a share of 2.
      const decisions = await Promise.all(
        Array.from({ length: 12 }, () =>
          instance.admit(tenant, { concurrentRequests: 2, requestsPerSecond: 1000 }, Date.now() + 60_000),
        ),
      );
      const admitted = decisions.filter((decision): decision is Admission => decision.admitted);
      expect(admitted).toHaveLength(2);
      expect(decisions.filter((decision) => !decision.admitted && decision.local)).toHaveLength(10);
      // Only the two admitted asked (again, where they met each other's write).
      expect(takes()).toBeLessThanOrEqual(2 + 2 * 9);
      await Promise.all(admitted.map((admission) => admission.release()));
    });

    it('refuses without asking the store for a moment after finding the tenant at its limit there', async () => {
      const real = makeStore();
      const { store: counting, takes } = countingTakes(real);
      const tenant = `t-${randomUUID()}`;
      const clock = manualClock();
      const limits = { concurrentRequests: 1, requestsPerSecond: 1000 };
      const holder = new TenantAdmission(real, randomUUID, clock.now);
      const held = await holder.admit(tenant, limits, clock.now() + 60_000);
      expect(held.admitted).toBe(true);
      const flooded = new TenantAdmission(counting, randomUUID, clock.now);
      expect(await flooded.admit(tenant, limits, clock.now() + 60_000)).toMatchObject({
        admitted: false,
        limit: 'concurrency',
        local: false,
      });
      const asked = takes();
      clock.advance(CONCURRENCY_MEMORY_MS - 1);
      expect(await flooded.admit(tenant, limits, clock.now() + 60_000)).toMatchObject({
        admitted: false,
        limit: 'concurrency',
        retryAfterSeconds: 1,
        local: true,
      });
      expect(takes()).toBe(asked);
      await (held as Admission).release();
      clock.advance(1);
      const after = await flooded.admit(tenant, limits, clock.now() + 60_000);
      expect(after.admitted).toBe(true);
      await (after as Admission).release();
    });

    it('admits a whole share asked for at once though each write comes back later than the resync time (a starved event loop)', async () => {
      const real = makeStore();
      const tenant = `t-${randomUUID()}`;
      const clock = manualClock();
      // Each write's answer reaches its request 150 ms (more than RESYNC_MS) after the store wrote
      // or refused: the time a loaded machine's event loop can take to come back to a request.
      const store: TenantLoadStore = {
        take: async (request) => {
          const result = await real.take(request);
          clock.advance(150);
          return result;
        },
        read: (t) => real.read(t),
        prepare: (t) => real.prepare(t),
        removeLapsed: (t, lapsed) => real.removeLapsed(t, lapsed),
        release: (t, slotId) => real.release(t, slotId),
      };
      const limits = { concurrentRequests: 8, requestsPerSecond: 50 };
      const instances = Array.from(
        { length: 8 },
        () => new TenantAdmission(store, randomUUID, clock.now, async () => undefined),
      );
      const decisions = await Promise.all(
        instances.map((instance) => instance.admit(tenant, limits, clock.now() + 600_000)),
      );
      // Branches chosen by the clock of the last read gave 5 of 8 here, the rest refused as "busy".
      expect(decisions.map((decision) => decision.admitted)).toEqual(Array(8).fill(true));
      await Promise.all(decisions.map((decision) => (decision.admitted ? decision.release() : undefined)));
    });

    it('frees the slots of an instance that died holding them once they lapse', async () => {
      const store = makeStore();
      const tenant = `t-${randomUUID()}`;
      const clock = manualClock();
      const crashed = new TenantAdmission(store, randomUUID, clock.now);
      const limits = { concurrentRequests: 3, requestsPerSecond: 1000 };
      // Three requests whose invocation ends 5 s from now, never given back.
      for (let i = 0; i < 3; i++)
        expect((await crashed.admit(tenant, limits, clock.now() + 5000)).admitted).toBe(true);
      const survivor = new TenantAdmission(store, randomUUID, clock.now);
      clock.advance(4000);
      expect(await survivor.admit(tenant, limits, clock.now() + 5000)).toMatchObject({
        admitted: false,
        limit: 'concurrency',
      });
      clock.advance(1001);
      const after = await survivor.admit(tenant, limits, clock.now() + 5000);
      expect(after.admitted).toBe(true);
      expect((await store.read(tenant))?.slots.size).toBe(1);
    });
  });
}

describe('the local DynamoDB (dynalite)', () => {
  it('answers a failed condition with the item as it stood, as DynamoDB does (a refusal costs no read)', async () => {
    const store = new DynamoDbTenantLoadStore(client, LOCAL_TENANT_LIMITS_TABLE, 2000);
    const tenant = `t-${randomUUID()}`;
    await store.prepare(tenant);
    const now = Date.now();
    const take = {
      tenant,
      slotExpiresAt: now + 60_000,
      concurrentRequests: 1,
      now,
      interval: 10,
      latestTat: now + 1000,
      branch: 'idle' as const,
      busyFloor: now - 100,
    };
    expect(await store.take({ ...take, slotId: 'first' })).toMatchObject({ taken: true });
    const refused = await store.take({ ...take, slotId: 'second' });
    expect(refused).toEqual({
      taken: false,
      load: { slots: new Map([['first', now + 60_000]]), tat: now + 10 },
    });
  });
});

describe('a store that does not answer', () => {
  it('fails the admission (the caller lets the request through) and takes back what it may have taken', async () => {
    const store = new DynamoDbTenantLoadStore(
      new DynamoDbJsonClient({
        endpoint: 'http://127.0.0.1:9',
        region: 'eu-central-1',
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      }),
      LOCAL_TENANT_LIMITS_TABLE,
      200,
    );
    const admission = new TenantAdmission(store, randomUUID);
    const started = performance.now();
    await expect(
      admission.admit('demo', { concurrentRequests: 8, requestsPerSecond: 50 }, Date.now() + 30_000),
    ).rejects.toThrow();
    expect(performance.now() - started).toBeLessThan(1000);
  });
});
