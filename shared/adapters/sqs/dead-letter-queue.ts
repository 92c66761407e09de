import type { MessageAttributeValue, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { isLaneAttribute, laneCopy } from './slow-lane.js';
import { sendTenantMessage } from './tenant-message.js';

/**
 * A consumer's own move of a message to its dead-letter queue. The queues' `maxReceiveCount`
 * leaves room for receives that never reached the function (a throttled consumer), so SQS's
 * redrive no longer ends a message at its last real attempt: the function does, with this.
 */
export interface DeadLetterQueue {
  /**
   * Sends a copy of the record (body and message attributes, plus `sourceMessageId` when there is
   * room for it) with `MessageGroupId` = `tenant` (fair queues). Resolves to the new message's id;
   * the caller then lets the original be deleted.
   */
  send(record: SQSRecord, tenant: string | undefined): Promise<string | undefined>;
}

/** SQS allows at most 10 message attributes on a message. */
const MAX_MESSAGE_ATTRIBUTES = 10;

/** The record's message attributes as SendMessage takes them (Lambda gives binary values in base64). */
function messageAttributes(record: SQSRecord): Record<string, MessageAttributeValue> {
  const attributes: Record<string, MessageAttributeValue> = {};
  for (const [name, value] of Object.entries(record.messageAttributes ?? {})) {
    // A copy redriven from the dead-letter queue is a new series in the fast lane: the lanes' marks go.
    if (isLaneAttribute(name)) continue;
    attributes[name] = {
      DataType: value.dataType,
      ...(value.stringValue === undefined ? {} : { StringValue: value.stringValue }),
      ...(value.binaryValue === undefined ? {} : { BinaryValue: Buffer.from(value.binaryValue, 'base64') }),
    };
  }
  // The dead-lettered copy has a new message id; this names the one the function's log lines and
  // the attempts' records carry (the message that began the series, in either lane).
  if (Object.keys(attributes).length < MAX_MESSAGE_ATTRIBUTES && !('sourceMessageId' in attributes)) {
    attributes.sourceMessageId = { DataType: 'String', StringValue: laneCopy(record).series };
  }
  return attributes;
}

/** The dead-letter queue at `queueUrl` (the process's SQS client by default, loaded on first use). */
export function createSqsDeadLetterQueue(queueUrl: string, client?: SQSClient): DeadLetterQueue {
  return {
    async send(record, tenant) {
      return sendTenantMessage(
        { queueUrl, body: record.body, tenant, attributes: messageAttributes(record) },
        undefined,
        client,
      );
    },
  };
}
