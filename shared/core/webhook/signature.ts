import { createHmac } from 'node:crypto';

/**
 * The Standard Webhooks signature `v1,<base64 HMAC-SHA256>` over `<id>.<timestamp>.<body>`.
 * The key is the subject's SECRET_WEBHOOK as UTF-8 bytes (not base64-decoded, even when it starts
 * with `whsec_`), so a receiver needs nothing but the secret it already holds.
 */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${id}.${timestamp}.${body}`);
  return `v1,${mac.digest('base64')}`;
}

/**
 * The `webhook-signature` header under each secret, space-separated, the current secret's first
 * (Standard Webhooks: a receiver accepts the message when any one of them verifies).
 */
export function signWebhookWithEach(
  secrets: readonly string[],
  id: string,
  timestamp: number,
  body: string,
): string {
  return secrets.map((secret) => signWebhook(secret, id, timestamp, body)).join(' ');
}
