import type { TakeRequest, TakeResult, TenantLoad, TenantLoadStore } from '../../core/tenant-limits.js';

/**
 * The tenants' load kept in this process only: what a process without a shared table counts (the
 * handlers run by tools and unit tests). A deployment always has the table (serverless.yml).
 */
export class InProcessTenantLoadStore implements TenantLoadStore {
  private readonly loads = new Map<string, { slots: Map<string, number>; tat: number | undefined }>();

  async take(request: TakeRequest): Promise<TakeResult> {
    const load = this.loads.get(request.tenant);
    if (!load) return { taken: false };
    const handedOver = request.handover !== undefined && load.slots.has(request.handover);
    const fits = handedOver || load.slots.size < request.concurrentRequests;
    const tat = load.tat;
    const branchHolds =
      request.branch === 'idle'
        ? tat === undefined || tat <= request.busyFloor
        : tat !== undefined && tat > request.busyFloor && tat <= request.latestTat;
    if (!fits || !branchHolds) return { taken: false, load: this.copy(load) };
    if (handedOver) load.slots.delete(request.handover as string);
    load.slots.set(request.slotId, request.slotExpiresAt);
    load.tat =
      request.branch === 'idle' ? request.now + request.interval : (tat as number) + request.interval;
    return { taken: true, tat: load.tat };
  }

  async read(tenant: string): Promise<TenantLoad | undefined> {
    const load = this.loads.get(tenant);
    return load && this.copy(load);
  }

  async prepare(tenant: string): Promise<void> {
    if (!this.loads.has(tenant)) this.loads.set(tenant, { slots: new Map(), tat: undefined });
  }

  async removeLapsed(tenant: string, lapsed: ReadonlyMap<string, number>): Promise<void> {
    const load = this.loads.get(tenant);
    for (const [id, expiresAt] of lapsed) if (load?.slots.get(id) === expiresAt) load.slots.delete(id);
  }

  async release(tenant: string, slotId: string): Promise<void> {
    this.loads.get(tenant)?.slots.delete(slotId);
  }

  private copy(load: { slots: Map<string, number>; tat: number | undefined }): TenantLoad {
    return { slots: new Map(load.slots), tat: load.tat };
  }
}
