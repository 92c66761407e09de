import {
  type AttributeValue,
  ConditionalCheckFailedException,
  DynamoDBClient,
  GetItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { TakeRequest, TakeResult, TenantLoad, TenantLoadStore } from '../../core/tenant-limits.js';

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
    private readonly client: DynamoDBClient,
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
      const answer = await this.client.send(
        new UpdateItemCommand({
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
        }),
        { abortSignal: AbortSignal.timeout(this.timeoutMs) },
      );
      return { taken: true, tat: Number(answer.Attributes?.tat?.N) };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        return { taken: false, load: error.Item ? toLoad(error.Item) : undefined };
      }
      throw error;
    }
  }

  async read(tenant: string): Promise<TenantLoad | undefined> {
    const answer = await this.client.send(
      new GetItemCommand({ TableName: this.table, Key: { tenant: { S: tenant } }, ConsistentRead: true }),
      { abortSignal: AbortSignal.timeout(this.timeoutMs) },
    );
    return answer.Item?.slots ? toLoad(answer.Item) : undefined;
  }

  async prepare(tenant: string): Promise<void> {
    await this.client.send(
      new UpdateItemCommand({
        TableName: this.table,
        Key: { tenant: { S: tenant } },
        UpdateExpression: 'SET slots = if_not_exists(slots, :empty), expiresAt = :itemExpiresAt',
        ExpressionAttributeValues: {
          ':empty': { M: {} },
          ':itemExpiresAt': number(Math.ceil(Date.now() / 1000) + ITEM_IDLE_SECONDS),
        },
      }),
      { abortSignal: AbortSignal.timeout(this.timeoutMs) },
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
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: { tenant: { S: tenant } },
          UpdateExpression: `REMOVE ${Object.keys(names)
            .map((name) => `slots.${name}`)
            .join(', ')}`,
          ConditionExpression: conditions.join(' AND '),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
        { abortSignal: AbortSignal.timeout(this.timeoutMs) },
      );
    } catch (error) {
      // Another instance removed them first.
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  async release(tenant: string, slotId: string): Promise<void> {
    await this.client
      .send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: { tenant: { S: tenant } },
          UpdateExpression: 'REMOVE slots.#slot',
          ConditionExpression: 'attribute_exists(slots)',
          ExpressionAttributeNames: { '#slot': slotId },
        }),
        { abortSignal: AbortSignal.timeout(this.timeoutMs) },
      )
      .catch((error: unknown) => {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      });
  }
}

/** A tenant's item outlives its last request by a day (the TTL attribute `expiresAt`). */
const ITEM_IDLE_SECONDS = 24 * 3600;

const number = (value: number): AttributeValue => ({ N: String(value) });

function toLoad(item: Record<string, AttributeValue>): TenantLoad {
  const slots = new Map<string, number>();
  for (const [id, value] of Object.entries(item.slots?.M ?? {})) slots.set(id, Number(value.N));
  return { slots, tat: item.tat?.N === undefined ? undefined : Number(item.tat.N) };
}

let shared: { endpoint: string | undefined; client: DynamoDBClient } | undefined;

/**
 * The DynamoDB client of this process: endpoint from `AWS_ENDPOINT_URL_DYNAMODB` where set (the
 * local stack's dynalite; a new one when it changes); no retries of its own, the limiter's time
 * limit is the bound.
 */
export function dynamoDbClient(): DynamoDBClient {
  const endpoint = process.env.AWS_ENDPOINT_URL_DYNAMODB || undefined;
  if (shared && shared.endpoint === endpoint) return shared.client;
  const client = new DynamoDBClient({ maxAttempts: 1, ...(endpoint ? { endpoint } : {}) });
  shared = { endpoint, client };
  return client;
}
