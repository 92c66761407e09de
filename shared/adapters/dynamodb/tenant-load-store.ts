import type { TakeRequest, TakeResult, TenantLoad, TenantLoadStore } from '../../core/tenant-limits.js';
import { type AttributeValue, DynamoDbError, DynamoDbJsonClient } from './json-client.js';

/**
 * The tenants' load in a DynamoDB table (`TENANT_LIMITS_TABLE`, key `tenant`): one item per tenant
 * with the map `slots` (slot id → lapse time, ms) and the rate's `tat` (ms). Taking a slot and the
 * rate's cell is one conditional `UpdateItem`; giving it back one more. `expiresAt` (seconds) is the
 * table's TTL attribute: a tenant idle for a day leaves no item behind.
 *
 * Why DynamoDB: counters shared by every Lambda instance need a store with atomic conditional
 * writes, reachable without a VPC connection of its own, billed per request and with nothing to
 * run; locally dynalite speaks its wire protocol, as fauxqs does SQS's.
 */
export class DynamoDbTenantLoadStore implements TenantLoadStore {
  constructor(
    private readonly client: DynamoDbJsonClient,
    private readonly table: string,
    /** Each call's own time limit (ms): the store answers in a few ms, or the request goes on without it. */
    private readonly timeoutMs: number,
  ) {}

  async take(request: TakeRequest): Promise<TakeResult> {
    const idle = request.branch === 'idle';
    const values: Record<string, AttributeValue> = {
      ':slotExpiresAt': number(request.slotExpiresAt),
      ':limit': number(request.concurrentRequests),
      ':busyFloor': number(request.busyFloor),
      ':itemExpiresAt': number(Math.ceil(request.now / 1000) + ITEM_IDLE_SECONDS),
      ...(idle
        ? { ':tat': number(request.now + request.interval) }
        : { ':interval': number(request.interval), ':latestTat': number(request.latestTat) }),
    };
    // A slot handed over (being given back by this process) is removed in the same write; while
    // it is there the new one takes its place, so the count does not grow.
    const handover = request.handover;
    const fits = handover
      ? '(size(slots) < :limit OR attribute_exists(slots.#handover))'
      : 'size(slots) < :limit';
    try {
      const answer = await this.client.call<{ Attributes?: Record<string, AttributeValue> }>(
        'UpdateItem',
        {
          TableName: this.table,
          Key: { tenant: { S: request.tenant } },
          UpdateExpression: `SET slots.#slot = :slotExpiresAt, tat = ${idle ? ':tat' : 'tat + :interval'}, expiresAt = :itemExpiresAt${
            handover ? ' REMOVE slots.#handover' : ''
          }`,
          ConditionExpression: `${fits} AND ${
            idle
              ? '(attribute_not_exists(tat) OR tat <= :busyFloor)'
              : 'tat > :busyFloor AND tat <= :latestTat'
          }`,
          ExpressionAttributeNames: {
            '#slot': request.slotId,
            ...(handover ? { '#handover': handover } : {}),
          },
          ExpressionAttributeValues: values,
          ReturnValues: 'UPDATED_NEW',
          // DynamoDB gives the item that failed the condition (so does the local stack's dynalite,
          // taught to: infra/local/aws-emulator.ts); a store that does not is read after.
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
        this.timeoutMs,
      );
      const tat = answer.Attributes?.tat;
      return { taken: true, tat: Number(tat && 'N' in tat ? tat.N : Number.NaN) };
    } catch (error) {
      if (conditionFailed(error)) {
        return { taken: false, load: error.item ? toLoad(error.item) : undefined };
      }
      throw error;
    }
  }

  async read(tenant: string): Promise<TenantLoad | undefined> {
    const answer = await this.client.call<{ Item?: Record<string, AttributeValue> }>(
      'GetItem',
      { TableName: this.table, Key: { tenant: { S: tenant } }, ConsistentRead: true },
      this.timeoutMs,
    );
    return answer.Item?.slots ? toLoad(answer.Item) : undefined;
  }

  async prepare(tenant: string): Promise<void> {
    await this.client.call(
      'UpdateItem',
      {
        TableName: this.table,
        Key: { tenant: { S: tenant } },
        UpdateExpression: 'SET slots = if_not_exists(slots, :empty), expiresAt = :itemExpiresAt',
        ExpressionAttributeValues: {
          ':empty': { M: {} },
          ':itemExpiresAt': number(Math.ceil(Date.now() / 1000) + ITEM_IDLE_SECONDS),
        },
      },
      this.timeoutMs,
    );
  }

  async removeLapsed(tenant: string, lapsed: ReadonlyMap<string, number>): Promise<void> {
    const names: Record<string, string> = {};
    const values: Record<string, AttributeValue> = {};
    const conditions: string[] = [];
    [...lapsed].slice(0, 50).forEach(([id, expiresAt], index) => {
      names[`#s${index}`] = id;
      values[`:e${index}`] = number(expiresAt);
      conditions.push(`slots.#s${index} = :e${index}`);
    });
    if (conditions.length === 0) return;
    try {
      await this.client.call(
        'UpdateItem',
        {
          TableName: this.table,
          Key: { tenant: { S: tenant } },
          UpdateExpression: `REMOVE ${Object.keys(names)
            .map((name) => `slots.${name}`)
            .join(', ')}`,
          ConditionExpression: conditions.join(' AND '),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        },
        this.timeoutMs,
      );
    } catch (error) {
      // Another instance removed them first.
      if (!conditionFailed(error)) throw error;
    }
  }

  async release(tenant: string, slotId: string): Promise<void> {
    await this.client
      .call(
        'UpdateItem',
        {
          TableName: this.table,
          Key: { tenant: { S: tenant } },
          UpdateExpression: 'REMOVE slots.#slot',
          ConditionExpression: 'attribute_exists(slots)',
          ExpressionAttributeNames: { '#slot': slotId },
        },
        this.timeoutMs,
      )
      .catch((error: unknown) => {
        if (!conditionFailed(error)) throw error;
      });
  }
}

/** A tenant's item outlives its last request by a day (the TTL attribute `expiresAt`). */
const ITEM_IDLE_SECONDS = 24 * 3600;

const number = (value: number): AttributeValue => ({ N: String(value) });

const conditionFailed = (error: unknown): error is DynamoDbError =>
  error instanceof DynamoDbError && error.type === 'ConditionalCheckFailedException';

function toLoad(item: Record<string, AttributeValue>): TenantLoad {
  const slots = new Map<string, number>();
  const held = item.slots && 'M' in item.slots ? item.slots.M : {};
  for (const [id, value] of Object.entries(held)) slots.set(id, Number('N' in value ? value.N : Number.NaN));
  const tat = item.tat && 'N' in item.tat ? Number(item.tat.N) : undefined;
  return { slots, tat };
}

let shared: { endpoint: string | undefined; client: DynamoDbJsonClient } | undefined;

/**
 * The DynamoDB client of this process: endpoint from `AWS_ENDPOINT_URL_DYNAMODB` where set (the
 * local stack's dynalite; a new one when it changes), the region's otherwise.
 */
export function dynamoDbClient(): DynamoDbJsonClient {
  const endpoint = process.env.AWS_ENDPOINT_URL_DYNAMODB || undefined;
  if (shared && shared.endpoint === endpoint) return shared.client;
  const client = new DynamoDbJsonClient(endpoint ? { endpoint } : {});
  shared = { endpoint, client };
  return client;
}
