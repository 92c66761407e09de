/** One POST to a receiver. */
export interface WebhookRequest {
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** How one POST ended, as far as the service can tell. */
export type WebhookSendResult =
  /** The receiver answered (any status; redirects are not followed). */
  | {
      readonly kind: 'response';
      readonly status: number;
      readonly retryAfter?: string;
      readonly durationMs: number;
    }
  /** The target resolved to an address the service must not connect to: nothing was sent. */
  | { readonly kind: 'refused'; readonly reason: string; readonly durationMs: number }
  /** DNS, connection or TLS failure, or no answer within the time-out (`timedOut`). */
  | {
      readonly kind: 'error';
      readonly error: string;
      readonly durationMs: number;
      readonly timedOut?: boolean;
    };

/** The port through which the core POSTs a webhook. */
export interface WebhookSender {
  /** `timeoutMs`: how long this attempt waits for the answer's status line (default: the sender's). */
  send(request: WebhookRequest, options?: { readonly timeoutMs?: number }): Promise<WebhookSendResult>;
}
