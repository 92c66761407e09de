import { EVENT_ID, SUBSCRIPTION_ID } from '../notifications/subscriptions.js';
import type { DeliveryOutcome } from './delivery-log.js';
import { type DocumentReceivedEvent, isSubjectId, MAX_SUBJECT_ID } from './event.js';

/**
 * The webhook admin function's use cases (CONTRACT.md section 6): send one event again, recover
 * what failed since a time, enable a disabled endpoint, show a subject's state. Invoked with the
 * Lambda Invoke API only; every answer is a JSON object, a bad request one that says what is wrong.
 */

/** An event as WEBHOOK_DELIVERY knows it. */
export interface RecordedEvent {
  readonly eventId: string;
  readonly subjectId: number;
  readonly documentId: number;
}

/** An event whose last outcome since a time is one that `recover` sends again. */
export interface RecoverableEvent extends RecordedEvent {
  readonly lastOutcome: DeliveryOutcome;
  /** ms since the epoch. */
  readonly lastAttemptAt: number;
  /** The WEBHOOK_DELIVERY row of that outcome, which a recover claims before it sends the event again. */
  readonly rowId: string;
}

/** One row of WEBHOOK_DELIVERY, as `status` shows it (never a secret: none is recorded). */
export interface AttemptSummary {
  readonly eventId: string;
  readonly documentId: number;
  readonly attempt: number;
  readonly attemptedAt: number;
  readonly outcome: string;
  readonly httpStatus: number | null;
  readonly error: string | null;
  readonly durationMs: number | null;
}

/** A subject's endpoint as the admin sees it; `endpoint` undefined before its first event. */
export interface SubjectEndpointState {
  readonly webhookUrl: string | null;
  readonly endpoint?: {
    readonly disabledAt: number | null;
    readonly enabledAt: number;
    readonly failingSince: number | null;
    readonly secretChangedAt: number | null;
  };
}

/** The admin's view of a tenant database. */
export interface WebhookAdminStore {
  /** The subject and document of an event recorded in WEBHOOK_DELIVERY. */
  findEvent(eventId: string): Promise<RecordedEvent | undefined>;
  /** Events whose last outcome at or after `since` is failed or disabled, oldest first, at most `limit`. */
  eventsToRecover(since: number, subjectId: number | undefined, limit: number): Promise<RecoverableEvent[]>;
  /** The subject's endpoint state; undefined when the subject does not exist. */
  subjectState(subjectId: number): Promise<SubjectEndpointState | undefined>;
  /** The subject's last `limit` attempts, newest first. */
  lastAttempts(subjectId: number, limit: number): Promise<AttemptSummary[]>;
  /**
   * Claims `event`'s failed or disabled row for this recover (a `requeued` row naming it): true
   * once, for one recover, however many run at once.
   */
  claimRecovery(event: RecoverableEvent, now: number): Promise<boolean>;
  /** Enables the endpoint and starts its failure count afresh (no row yet: nothing to do). */
  enable(subjectId: number, now: number): Promise<void>;
}

/** Where an event is sent again: the document-received queue. Answers the message id. */
export interface DocumentEventQueue {
  send(event: DocumentReceivedEvent): Promise<string | undefined>;
}

export type WebhookAdminRequest =
  | { readonly action: 'resend'; readonly tenant: string; readonly eventId: string }
  | {
      readonly action: 'recover';
      readonly tenant: string;
      readonly since: number;
      readonly subjectId?: number;
      readonly dryRun: boolean;
    }
  | { readonly action: 'enable'; readonly tenant: string; readonly subjectId: number }
  | { readonly action: 'status'; readonly tenant: string; readonly subjectId: number }
  /** Change notifications (CONTRACT 4c): a fresh `table.changed` to one subscription, or to those that failed since. */
  | {
      readonly action: 'notify';
      readonly tenant: string;
      readonly subscriptionId?: string;
      readonly since?: number;
    };

/** A request the admin function cannot carry out; its message says why. */
export class WebhookAdminError extends Error {
  override readonly name = 'WebhookAdminError';
}

export const ADMIN_ACTIONS = ['resend', 'recover', 'enable', 'status', 'notify'] as const;
/** `recover` sends at most this many events per call; a larger set is narrowed with `since` or `subjectId`. */
export const MAX_RECOVER_EVENTS = 1000;
/** `status` shows this many attempts. */
export const STATUS_ATTEMPTS = 20;

const TENANT_ID = /^[a-z0-9][a-z0-9-]{0,62}$/;
/** The times `since` may name: what every database's time column holds, and no attempt is older. */
const EARLIEST_SINCE = Date.UTC(1970, 0, 1);
const LATEST_SINCE = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
const ISO_TIME = /^\d{4}-\d\d-\d\d(T\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)?)?$/;

function subjectIdOf(value: unknown, required: boolean): number | undefined {
  if (value === undefined && !required) return undefined;
  if (!isSubjectId(value)) {
    throw new WebhookAdminError(`"subjectId" must be a positive integer up to ${MAX_SUBJECT_ID}`);
  }
  return value;
}

/** Reads an admin event; throws WebhookAdminError naming what is wrong. */
export function parseWebhookAdminRequest(input: unknown): WebhookAdminRequest {
  if (!input || typeof input !== 'object' || Array.isArray(input)) {
    throw new WebhookAdminError(
      'The event must be a JSON object like {"action":"status","tenant":"demo","subjectId":1}',
    );
  }
  const event = input as Record<string, unknown>;
  const { action, tenant } = event;
  if (typeof action !== 'string' || !(ADMIN_ACTIONS as readonly string[]).includes(action)) {
    throw new WebhookAdminError(`"action" must be one of ${ADMIN_ACTIONS.join(', ')}`);
  }
  if (typeof tenant !== 'string' || !TENANT_ID.test(tenant)) {
    throw new WebhookAdminError('"tenant" must be a tenant id');
  }
  switch (action) {
    case 'resend': {
      if (typeof event.eventId !== 'string' || !EVENT_ID.test(event.eventId)) {
        throw new WebhookAdminError(
          '"eventId" must be an event id as in webhook-id (msg_ and 32 hex digits)',
        );
      }
      return { action, tenant, eventId: event.eventId };
    }
    case 'notify': {
      if (event.subscriptionId !== undefined) {
        if (typeof event.subscriptionId !== 'string' || !SUBSCRIPTION_ID.test(event.subscriptionId)) {
          throw new WebhookAdminError('"subscriptionId" must be a subscription id (sub_ and 24 hex digits)');
        }
        return { action, tenant, subscriptionId: event.subscriptionId };
      }
      if (event.since === undefined) {
        throw new WebhookAdminError(
          '"notify" needs "subscriptionId", or "since" (every subscription that failed since)',
        );
      }
      return { action, tenant, since: sinceOf(event.since) };
    }
    case 'recover': {
      const since = sinceOf(event.since);
      if (event.dryRun !== undefined && typeof event.dryRun !== 'boolean') {
        throw new WebhookAdminError('"dryRun" must be true or false');
      }
      const subjectId = subjectIdOf(event.subjectId, false);
      return {
        action,
        tenant,
        since,
        ...(subjectId === undefined ? {} : { subjectId }),
        dryRun: event.dryRun === true,
      };
    }
    default:
      return {
        action: action as 'enable' | 'status',
        tenant,
        subjectId: subjectIdOf(event.subjectId, true)!,
      };
  }
}

/** `since` of an admin event: an ISO time (UTC unless it says otherwise) within the years the databases hold. */
function sinceOf(value: unknown): number {
  const text = typeof value === 'string' ? value.trim() : '';
  const since = ISO_TIME.test(text)
    ? Date.parse(/T.*(Z|[+-]\d\d:\d\d)$/.test(text) ? text : `${text}Z`)
    : Number.NaN;
  // A date the calendar does not have (2025-02-30) is refused, not rolled over to March.
  const day = text.slice(0, 10);
  const real =
    !Number.isNaN(since) && new Date(Date.parse(`${day}T12:00:00Z`)).toISOString().slice(0, 10) === day;
  if (Number.isNaN(since) || !real) {
    throw new WebhookAdminError(
      '"since" must be an ISO time like 2025-03-03T00:00:00Z (UTC unless it says otherwise)',
    );
  }
  if (since < EARLIEST_SINCE || since > LATEST_SINCE) {
    throw new WebhookAdminError(
      `"since" must be from ${iso(EARLIEST_SINCE)} to ${iso(LATEST_SINCE)}; got ${iso(since)}`,
    );
  }
  return since;
}

const iso = (ms: number | null | undefined) =>
  ms === null || ms === undefined ? null : new Date(ms).toISOString();

export interface WebhookAdminContext {
  readonly store: WebhookAdminStore;
  readonly queue: DocumentEventQueue;
  readonly now?: () => number;
}

/** Carries out an admin request; the answer is JSON. Throws WebhookAdminError for what cannot be done. */
export async function runWebhookAdmin(
  request: WebhookAdminRequest,
  ctx: WebhookAdminContext,
): Promise<Record<string, unknown>> {
  const now = ctx.now ?? Date.now;
  const { tenant } = request;
  switch (request.action) {
    case 'notify':
      // Change notifications' own store and queue: the handler carries it out (shared/lambda/webhook-admin.ts).
      throw new WebhookAdminError('"notify" is carried out by the admin function itself');
    case 'resend': {
      const event = await ctx.store.findEvent(request.eventId);
      if (!event) {
        throw new WebhookAdminError(`No event ${request.eventId} in WEBHOOK_DELIVERY of tenant ${tenant}`);
      }
      const messageId = await ctx.queue.send({
        tenant,
        subjectId: event.subjectId,
        documentId: event.documentId,
        resend: true,
      });
      return { ok: true, action: 'resend', tenant, ...event, messageId };
    }
    case 'recover': {
      const found = await ctx.store.eventsToRecover(request.since, request.subjectId, MAX_RECOVER_EVENTS + 1);
      const events = found.slice(0, MAX_RECOVER_EVENTS);
      const answer = {
        ok: true,
        action: 'recover',
        tenant,
        since: iso(request.since),
        ...(request.subjectId === undefined ? {} : { subjectId: request.subjectId }),
        dryRun: request.dryRun,
        count: events.length,
        // More than one call sends: the rest follows with a later `since` or per subject.
        truncated: found.length > MAX_RECOVER_EVENTS,
        events: events.map((event) => ({
          eventId: event.eventId,
          subjectId: event.subjectId,
          documentId: event.documentId,
          lastOutcome: event.lastOutcome,
          lastAttemptAt: iso(event.lastAttemptAt),
        })),
      };
      if (request.dryRun) return answer;
      // Each event is claimed before it is sent: a recover running at the same time (another
      // instance of the function, or a second call) sends what it claimed, and skips the rest.
      let sent = 0;
      let claimedElsewhere = 0;
      for (const event of events) {
        if (!(await ctx.store.claimRecovery(event, now()))) {
          claimedElsewhere++;
          continue;
        }
        await ctx.queue.send({
          tenant,
          subjectId: event.subjectId,
          documentId: event.documentId,
          resend: true,
        });
        sent++;
      }
      return { ...answer, sent, claimedElsewhere };
    }
    case 'enable': {
      const state = await ctx.store.subjectState(request.subjectId);
      if (!state)
        throw new WebhookAdminError(`Subject ${request.subjectId} does not exist in tenant ${tenant}`);
      await ctx.store.enable(request.subjectId, now());
      return {
        ok: true,
        action: 'enable',
        tenant,
        subjectId: request.subjectId,
        state: 'enabled',
        wasDisabled: (state.endpoint?.disabledAt ?? null) !== null,
      };
    }
    case 'status': {
      const state = await ctx.store.subjectState(request.subjectId);
      if (!state)
        throw new WebhookAdminError(`Subject ${request.subjectId} does not exist in tenant ${tenant}`);
      const attempts = await ctx.store.lastAttempts(request.subjectId, STATUS_ATTEMPTS);
      const endpoint = state.endpoint;
      const disabled = (endpoint?.disabledAt ?? null) !== null;
      return {
        ok: true,
        action: 'status',
        tenant,
        subjectId: request.subjectId,
        webhookUrl: state.webhookUrl,
        state: disabled ? 'disabled' : 'enabled',
        // Enabled since the endpoint was first seen (or enabled again); null before its first event.
        since: iso(disabled ? endpoint?.disabledAt : endpoint?.enabledAt),
        failingSince: iso(endpoint?.failingSince),
        secretChangedAt: iso(endpoint?.secretChangedAt),
        lastAttempts: attempts.map((attempt) => ({ ...attempt, attemptedAt: iso(attempt.attemptedAt) })),
      };
    }
  }
}
