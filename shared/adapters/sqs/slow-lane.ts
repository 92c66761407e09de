import type { MessageAttributeValue, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import type { DeliveryLane } from '../../core/delivery/lanes.js';
import { TRACEPARENT, TRACESTATE } from '../../core/trace-context.js';
import { MAX_DELAY_SECONDS, sendTenantMessage } from './tenant-message.js';

/**
 * The delivery lanes on SQS (core/delivery/lanes.ts): a queue each, the slow lane's messages
 * marked by message attributes. A copy handed to the slow lane keeps its body and names the
 * message it continues (`series`), so that its attempts are counted with those made before; a
 * retry due later than SQS can hold a message back (15 minutes) carries when it is due (`dueAt`).
 */
export interface LaneCopy {
  readonly lane: DeliveryLane;
  /** The message whose attempts this copy continues: its own id in the fast lane. */
  readonly series: string;
  /** When its next attempt is due (ms since the epoch), if later than it could be held back. */
  readonly dueAt?: number;
}

const LANE = 'svcLane';
const SERIES = 'svcSeries';
const DUE_AT = 'svcDueAt';
/** Whether a message attribute is one of the lanes' own marks. */
export const isLaneAttribute = (name: string) => name === LANE || name === SERIES || name === DUE_AT;

/** Where a received record stands among the lanes, from its message attributes. */
export function laneCopy(record: Pick<SQSRecord, 'messageId' | 'messageAttributes'>): LaneCopy {
  const attribute = (name: string) => record.messageAttributes?.[name]?.stringValue;
  const lane = attribute(LANE) === 'slow' ? 'slow' : 'fast';
  const series = attribute(SERIES);
  const dueAt = Number(attribute(DUE_AT));
  return {
    lane,
    series: lane === 'slow' && series ? series.slice(0, 100) : record.messageId,
    ...(lane === 'slow' && Number.isSafeInteger(dueAt) && dueAt > 0 ? { dueAt } : {}),
  };
}

export interface SlowLane {
  /** Puts a copy of `record` on the slow lane, its next attempt due `delaySeconds` from `now`. */
  hand(record: SQSRecord, tenant: string, delaySeconds: number, now: number): Promise<void>;
}

/** The slow lane's queue at `queueUrl` (the process's SQS client by default). */
export function createSqsSlowLane(queueUrl: string, client?: SQSClient): SlowLane {
  return {
    async hand(record, tenant, delaySeconds, now) {
      const copy = laneCopy(record);
      const delay = Math.max(0, Math.round(delaySeconds));
      const attributes: Record<string, MessageAttributeValue> = {
        [LANE]: { DataType: 'String', StringValue: 'slow' },
        [SERIES]: { DataType: 'String', StringValue: copy.series },
      };
      if (delay > MAX_DELAY_SECONDS) {
        attributes[DUE_AT] = { DataType: 'Number', StringValue: String(now + delay * 1000) };
      }
      // The copy stays in the trace of the event it continues (CONTRACT 8a).
      for (const name of [TRACEPARENT, TRACESTATE]) {
        const value = record.messageAttributes?.[name]?.stringValue;
        if (value) attributes[name] = { DataType: 'String', StringValue: value };
      }
      await sendTenantMessage(
        { queueUrl, body: record.body, tenant, delaySeconds: delay, attributes },
        undefined,
        client,
      );
    },
  };
}
