import type { EndpointMemory, WebhookSubject } from './delivery-log.js';

/** How long both secrets sign after a rotation, and how long an endpoint may fail before it is disabled. */
export interface EndpointPolicy {
  /** `WEBHOOK_SECRET_OVERLAP_HOURS` in ms. */
  readonly secretOverlapMs: number;
  /** `WEBHOOK_DISABLE_AFTER_HOURS` in ms. */
  readonly disableAfterMs: number;
}

/** What the service remembers after seeing the subject's settings now, and whether that differs from before. */
export interface EndpointObservation {
  readonly memory: EndpointMemory;
  readonly changed: boolean;
  /** The WEBHOOK_URL changed while the endpoint was disabled: it is enabled again. */
  readonly enabledByUrlChange: boolean;
}

/**
 * The endpoint as remembered once the subject's current settings are seen at `now`. A new secret
 * becomes the current one and the one last used the previous (from now on, both sign for the
 * overlap); a new WEBHOOK_URL enables a disabled endpoint and starts its failure count afresh.
 */
export function observeEndpoint(
  before: EndpointMemory | undefined,
  subject: WebhookSubject,
  now: number,
): EndpointObservation {
  if (!before) {
    return {
      memory: {
        webhookUrl: subject.webhookUrl,
        secret: subject.secret,
        previousSecret: null,
        secretChangedAt: null,
        failingSince: null,
        disabledAt: null,
        enabledAt: now,
        slowSince: null,
      },
      changed: true,
      enabledByUrlChange: false,
    };
  }
  let memory = before;
  if (subject.secret !== before.secret) {
    memory = { ...memory, secret: subject.secret, previousSecret: before.secret, secretChangedAt: now };
  }
  const urlChanged = subject.webhookUrl !== before.webhookUrl;
  if (urlChanged) {
    memory = {
      ...memory,
      webhookUrl: subject.webhookUrl,
      failingSince: null,
      disabledAt: null,
      enabledAt: before.disabledAt === null ? before.enabledAt : now,
      // Another receiver: it starts in the fast lane.
      slowSince: null,
    };
  }
  return { memory, changed: memory !== before, enabledByUrlChange: urlChanged && before.disabledAt !== null };
}

/**
 * The secrets a delivery at `now` is signed with: the current one, then the previous one while
 * the overlap after the change lasts (and it differs and exists). Empty without a current secret.
 */
export function signingSecrets(memory: EndpointMemory, now: number, overlapMs: number): string[] {
  if (memory.secret === null) return [];
  const inOverlap =
    memory.previousSecret !== null &&
    memory.previousSecret !== memory.secret &&
    memory.secretChangedAt !== null &&
    now < memory.secretChangedAt + overlapMs;
  return inOverlap ? [memory.secret, memory.previousSecret!] : [memory.secret];
}

/** Hours (fractions allowed) as ms. */
export const hoursToMs = (hours: number) => Math.round(hours * 3_600_000);
