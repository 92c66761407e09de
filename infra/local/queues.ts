/** A queue of serverless.yml with its dead-letter queue and the SQS-triggered function it feeds. */
export interface LocalQueue {
  /** Queue name on the emulator. */
  readonly name: string;
  /** Environment variable through which the handlers learn the queue URL. */
  readonly urlEnv: string;
  readonly visibilityTimeoutSeconds: number;
  /** Deliveries before the message moves to `<name>-dlq`. */
  readonly maxReceiveCount: number;
  /** Environment variable for the dead-letter queue URL, where a handler needs it. */
  readonly dlqUrlEnv?: string;
  /** The consuming function: `handler` of serverless.yml. */
  readonly consumer: { readonly function: string; readonly handler: string; readonly batchSize: number };
}

/** Every queue of the service. Issues that add a queue add it here and in serverless.yml. */
export const localQueues: readonly LocalQueue[] = [];
