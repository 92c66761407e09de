import type { WebhookSettings } from '../config/webhook.js';
import type { WebhookSender } from '../core/delivery/sender.js';

let senderCache: { key: string; sender: Promise<WebhookSender> } | undefined;

/**
 * One sender per setting, created on first need (its keep-alive connections outlive an invocation);
 * the change notifier's deliveries use it too.
 */
export function defaultSender(settings: WebhookSettings): Promise<WebhookSender> {
  const key = `${settings.allowPrivateTargets}/${settings.timeoutMs}`;
  if (senderCache?.key !== key) {
    const previous = senderCache?.sender;
    senderCache = {
      key,
      sender: import('../adapters/http/webhook-sender.js').then(({ createHttpWebhookSender }) =>
        createHttpWebhookSender({
          allowPrivateTargets: settings.allowPrivateTargets,
          timeoutMs: settings.timeoutMs,
        }),
      ),
    };
    void previous?.then((sender) => (sender as { close?: () => void }).close?.());
  }
  return senderCache.sender;
}
