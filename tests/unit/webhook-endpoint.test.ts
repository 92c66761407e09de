import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { invocableFunctions } from '../../infra/local/lambda-invoke.js';
import { readServerlessConfig } from '../../infra/local/serverless-config.js';
import { UsageError, webhookCommand } from '../../infra/tools/webhooks.js';
import { sqlTimeMs } from '../../shared/adapters/sql-common/times.js';
import { getWebhookSettings } from '../../shared/config/webhook.js';
import {
  type DocumentEventQueue,
  parseWebhookAdminRequest,
  runWebhookAdmin,
  type WebhookAdminStore,
} from '../../shared/core/webhook/admin.js';
import type { EndpointMemory } from '../../shared/core/webhook/delivery-log.js';
import { observeEndpoint, signingSecrets } from '../../shared/core/webhook/endpoint.js';
import { parseDocumentReceivedEvent } from '../../shared/core/webhook/event.js';
import { signWebhookWithEach } from '../../shared/core/webhook/signature.js';

const NOW = Date.parse('2025-03-03T08:00:00.000Z');
const HOUR = 3_600_000;
const remembered = (change: Partial<EndpointMemory> = {}): EndpointMemory => ({
  webhookUrl: 'https://erp.example.cz/hook',
  secret: 'old',
  previousSecret: null,
  secretChangedAt: null,
  failingSince: null,
  disabledAt: null,
  enabledAt: NOW - 48 * HOUR,
  slowSince: null,
  ...change,
});

describe('Function: observeEndpoint', () => {
  it('remembers a subject seen for the first time as enabled, with no previous secret', () => {
    expect(observeEndpoint(undefined, { webhookUrl: 'https://a.cz', secret: 's' }, NOW)).toEqual({
      memory: {
        webhookUrl: 'https://a.cz',
        secret: 's',
        previousSecret: null,
        secretChangedAt: null,
        failingSince: null,
        disabledAt: null,
        enabledAt: NOW,
        slowSince: null,
      },
      changed: true,
      enabledByUrlChange: false,
    });
  });

  it('keeps what it remembers while nothing changed', () => {
    const before = remembered({ failingSince: NOW - HOUR });
    expect(observeEndpoint(before, { webhookUrl: before.webhookUrl, secret: 'old' }, NOW)).toEqual({
      memory: before,
      changed: false,
      enabledByUrlChange: false,
    });
  });

  it('makes a new secret current and the one last used the previous, from now on', () => {
    const { memory, changed } = observeEndpoint(
      remembered(),
      { webhookUrl: 'https://erp.example.cz/hook', secret: 'new' },
      NOW,
    );
    expect(changed).toBe(true);
    expect(memory).toMatchObject({ secret: 'new', previousSecret: 'old', secretChangedAt: NOW });
  });

  it('enables a disabled endpoint when its WEBHOOK_URL changes, and starts its failure count afresh', () => {
    const before = remembered({ failingSince: NOW - 200 * HOUR, disabledAt: NOW - 80 * HOUR });
    const observed = observeEndpoint(
      before,
      { webhookUrl: 'https://new.example.cz/hook', secret: 'old' },
      NOW,
    );
    expect(observed).toMatchObject({
      changed: true,
      enabledByUrlChange: true,
      memory: {
        webhookUrl: 'https://new.example.cz/hook',
        failingSince: null,
        disabledAt: null,
        enabledAt: NOW,
      },
    });
    // Its secret alone changing does not enable it.
    expect(
      observeEndpoint(before, { webhookUrl: before.webhookUrl, secret: 'other' }, NOW).memory.disabledAt,
    ).toBe(before.disabledAt);
  });
});

describe('Function: signingSecrets', () => {
  const rotated = remembered({ secret: 'new', previousSecret: 'old', secretChangedAt: NOW });

  it('signs with both secrets, the new first, until the overlap ends; then with the new one only', () => {
    expect(signingSecrets(rotated, NOW, 24 * HOUR)).toEqual(['new', 'old']);
    expect(signingSecrets(rotated, NOW + 24 * HOUR - 1, 24 * HOUR)).toEqual(['new', 'old']);
    expect(signingSecrets(rotated, NOW + 24 * HOUR, 24 * HOUR)).toEqual(['new']);
    expect(signingSecrets(rotated, NOW, 0)).toEqual(['new']);
  });

  it('signs with nothing without a current secret, and never with the same secret twice', () => {
    expect(signingSecrets({ ...rotated, secret: null }, NOW, 24 * HOUR)).toEqual([]);
    expect(signingSecrets({ ...rotated, previousSecret: 'new' }, NOW, 24 * HOUR)).toEqual(['new']);
    expect(signingSecrets({ ...rotated, previousSecret: null }, NOW, 24 * HOUR)).toEqual(['new']);
  });

  it('writes a header the Standard Webhooks reference library verifies with either secret', () => {
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = {
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signWebhookWithEach(['new', 'old'], 'msg_1', timestamp, '123456'),
    };
    expect(headers['webhook-signature']).toMatch(/^v1,\S+ v1,\S+$/);
    expect(() => new Webhook('new', { format: 'raw' }).verify('123456', headers)).not.toThrow();
    expect(() => new Webhook('old', { format: 'raw' }).verify('123456', headers)).not.toThrow();
    expect(() => new Webhook('other', { format: 'raw' }).verify('123456', headers)).toThrow();
  });
});

describe('Function: getWebhookSettings (rotation and disabling)', () => {
  afterEach(() => vi.unstubAllEnvs());

  it('takes the contract defaults, 24 and 120 hours', () => {
    vi.stubEnv('WEBHOOK_SECRET_OVERLAP_HOURS', '');
    vi.stubEnv('WEBHOOK_DISABLE_AFTER_HOURS', '');
    expect(getWebhookSettings().endpointPolicy).toEqual({
      secretOverlapMs: 24 * HOUR,
      disableAfterMs: 120 * HOUR,
    });
  });

  it('allows fractions of an hour and refuses anything else by name', () => {
    vi.stubEnv('WEBHOOK_SECRET_OVERLAP_HOURS', '0.5');
    vi.stubEnv('WEBHOOK_DISABLE_AFTER_HOURS', '0.001');
    expect(getWebhookSettings().endpointPolicy).toEqual({ secretOverlapMs: HOUR / 2, disableAfterMs: 3600 });
    vi.stubEnv('WEBHOOK_DISABLE_AFTER_HOURS', '-1');
    expect(() => getWebhookSettings()).toThrow(/^WEBHOOK_DISABLE_AFTER_HOURS must be a number of hours/);
    vi.stubEnv('WEBHOOK_DISABLE_AFTER_HOURS', '1');
    vi.stubEnv('WEBHOOK_SECRET_OVERLAP_HOURS', 'a day');
    expect(() => getWebhookSettings()).toThrow(/^WEBHOOK_SECRET_OVERLAP_HOURS must be a number of hours/);
  });
});

describe('Function: parseDocumentReceivedEvent (resend)', () => {
  it("reads the admin function's resend flag and refuses one that is not a boolean", () => {
    expect(
      parseDocumentReceivedEvent('{"tenant":"demo","subjectId":1,"documentId":2,"resend":true}'),
    ).toEqual({
      tenant: 'demo',
      subjectId: 1,
      documentId: 2,
      resend: true,
    });
    expect(
      parseDocumentReceivedEvent('{"tenant":"demo","subjectId":1,"documentId":2,"resend":false}'),
    ).toEqual({
      tenant: 'demo',
      subjectId: 1,
      documentId: 2,
    });
    expect(() =>
      parseDocumentReceivedEvent('{"tenant":"demo","subjectId":1,"documentId":2,"resend":"yes"}'),
    ).toThrow('"resend" must be true or false');
  });
});

/** An in-memory admin store (a fake of the port) and a queue that records what it was sent. */
function adminFakes() {
  const sent: unknown[] = [];
  const enabled: number[] = [];
  const claimed = new Set<string>();
  const store: WebhookAdminStore = {
    findEvent: async (eventId) =>
      eventId === `msg_${'a'.repeat(32)}` ? { eventId, subjectId: 7, documentId: 70 } : undefined,
    eventsToRecover: async (_since, subjectId, limit) =>
      Array.from({ length: subjectId === 7 ? 2 : 1005 }, (_, i) => ({
        eventId: `msg_${i}`,
        subjectId: subjectId ?? 8,
        documentId: 100 + i,
        lastOutcome: 'failed' as const,
        lastAttemptAt: NOW,
        rowId: String(1000 + i),
      })).slice(0, limit),
    // Claimed once per row, as the database's unique index allows.
    claimRecovery: async (event) => {
      if (claimed.has(event.rowId)) return false;
      claimed.add(event.rowId);
      return true;
    },
    subjectState: async (subjectId) =>
      subjectId === 7
        ? {
            webhookUrl: 'https://a.cz',
            endpoint: {
              disabledAt: NOW,
              enabledAt: NOW - HOUR,
              failingSince: NOW - 2 * HOUR,
              secretChangedAt: null,
            },
          }
        : undefined,
    lastAttempts: async () => [],
    enable: async (subjectId) => {
      enabled.push(subjectId);
    },
  };
  const queue: DocumentEventQueue = {
    send: async (event) => {
      sent.push(event);
      return `m-${sent.length}`;
    },
  };
  return { store, queue, sent, enabled };
}

describe('Function: runWebhookAdmin', () => {
  it('resends an event as a resend of the same subject and document', async () => {
    const { store, queue, sent } = adminFakes();
    const eventId = `msg_${'a'.repeat(32)}`;
    expect(await runWebhookAdmin({ action: 'resend', tenant: 'demo', eventId }, { store, queue })).toEqual({
      ok: true,
      action: 'resend',
      tenant: 'demo',
      eventId,
      subjectId: 7,
      documentId: 70,
      messageId: 'm-1',
    });
    expect(sent).toEqual([{ tenant: 'demo', subjectId: 7, documentId: 70, resend: true }]);
  });

  it('lists without sending on a dry run, sends otherwise, and at most 1000 events a call', async () => {
    const { store, queue, sent } = adminFakes();
    const dry = await runWebhookAdmin(
      { action: 'recover', tenant: 'demo', since: NOW - HOUR, subjectId: 7, dryRun: true },
      { store, queue },
    );
    expect(dry).toMatchObject({
      dryRun: true,
      count: 2,
      truncated: false,
      since: '2025-03-03T07:00:00.000Z',
    });
    expect(sent).toEqual([]);
    const all = await runWebhookAdmin(
      { action: 'recover', tenant: 'demo', since: NOW - HOUR, dryRun: false },
      { store, queue },
    );
    expect(all).toMatchObject({ count: 1000, sent: 1000, truncated: true });
    expect(sent).toHaveLength(1000);
  });

  it('enables a subject and shows its state, and says so for a subject that does not exist', async () => {
    const { store, queue, enabled } = adminFakes();
    expect(
      await runWebhookAdmin({ action: 'status', tenant: 'demo', subjectId: 7 }, { store, queue }),
    ).toMatchObject({
      state: 'disabled',
      since: new Date(NOW).toISOString(),
      failingSince: new Date(NOW - 2 * HOUR).toISOString(),
      secretChangedAt: null,
    });
    expect(
      await runWebhookAdmin({ action: 'enable', tenant: 'demo', subjectId: 7 }, { store, queue }),
    ).toMatchObject({
      wasDisabled: true,
    });
    expect(enabled).toEqual([7]);
    await expect(
      runWebhookAdmin({ action: 'enable', tenant: 'demo', subjectId: 8 }, { store, queue }),
    ).rejects.toThrow('Subject 8 does not exist in tenant demo');
  });
});

describe('Function: parseWebhookAdminRequest', () => {
  it('reads each action with what it needs', () => {
    expect(parseWebhookAdminRequest({ action: 'recover', tenant: 'demo', since: '2025-03-03' })).toEqual({
      action: 'recover',
      tenant: 'demo',
      since: Date.parse('2025-03-03T00:00:00Z'),
      dryRun: false,
    });
    expect(
      parseWebhookAdminRequest({
        action: 'recover',
        tenant: 'demo',
        since: '2025-03-03T10:00:00+02:00',
        subjectId: 7,
        dryRun: true,
      }),
    ).toMatchObject({ since: Date.parse('2025-03-03T08:00:00Z'), subjectId: 7, dryRun: true });
  });

  it.each([
    [null, 'The event must be a JSON object'],
    [[], 'The event must be a JSON object'],
    [{ action: 'delete', tenant: 'demo' }, '"action" must be one of'],
    [{ action: 'status', tenant: '../x', subjectId: 1 }, '"tenant" must be a tenant id'],
    [{ action: 'enable', tenant: 'demo' }, '"subjectId" must be a positive integer'],
    [{ action: 'status', tenant: 'demo', subjectId: '1' }, '"subjectId" must be a positive integer'],
    [{ action: 'recover', tenant: 'demo' }, '"since" must be an ISO time'],
    [{ action: 'recover', tenant: 'demo', since: '2025-13-45T99:00:00Z' }, '"since" must be an ISO time'],
    [
      { action: 'recover', tenant: 'demo', since: '2025-03-03', dryRun: 'yes' },
      '"dryRun" must be true or false',
    ],
    [{ action: 'resend', tenant: 'demo', eventId: 'msg_xyz' }, '"eventId" must be an event id'],
  ])('refuses %j: %s', (event, message) => {
    expect(() => parseWebhookAdminRequest(event)).toThrow(message);
  });
});

describe('Function: webhookCommand (npm run webhooks)', () => {
  it('calls webhookAdmin on the local stack by default, for tenant demo', () => {
    expect(webhookCommand(['status', '--subject', '7'], { PORT: '4000' })).toEqual({
      event: { action: 'status', tenant: 'demo', subjectId: 7 },
      endpoint: 'http://127.0.0.1:4000',
      functionName: 'webhookAdmin',
      region: 'eu-central-1',
      deployed: false,
    });
    expect(
      webhookCommand(['recover', '--since', '2025-03-03T00:00:00Z', '--dry-run'], {
        WEBHOOKS_ENDPOINT: 'http://h:1',
      }),
    ).toMatchObject({
      event: { action: 'recover', since: '2025-03-03T00:00:00Z', dryRun: true },
      endpoint: 'http://h:1',
    });
  });

  it("calls a deployed stage's function with the caller's AWS settings", () => {
    expect(
      webhookCommand(['resend', '--event', 'msg_1', '--stage', 'prod', '--tenant', 'acme'], {
        AWS_REGION: 'eu-west-1',
      }),
    ).toEqual({
      event: { action: 'resend', tenant: 'acme', eventId: 'msg_1' },
      endpoint: undefined,
      functionName: 'erp-integration-gateway-prod-webhookAdmin',
      region: 'eu-west-1',
      deployed: true,
    });
    expect(() => webhookCommand(['status', '--stage', 'prod'], {})).toThrow(UsageError);
    expect(() => webhookCommand([], {})).toThrow(UsageError);
    expect(() => webhookCommand(['status', '--colour'], {})).toThrow(UsageError);
  });
});

describe('Function: invocableFunctions', () => {
  it('is every function of serverless.yml without an HTTP route, the admin function among them', () => {
    const config = readServerlessConfig();
    expect([...invocableFunctions(config).keys()].sort()).toEqual([
      'changeFeedRetention',
      'changeNotifier',
      'deliverWebhook',
      'webJobWorker',
      'webhookAdmin',
    ]);
    expect(config.functions.webhookAdmin?.events ?? []).toEqual([]);
  });
});

describe('Function: sqlTimeMs', () => {
  it("reads the SQL Server driver's Date and the embedded database's wall-clock UTC text alike", () => {
    expect(sqlTimeMs(new Date(NOW))).toBe(NOW);
    expect(sqlTimeMs('2025-03-03T08:00:00')).toBe(NOW);
    expect(sqlTimeMs('2025-03-03 08:00:00.000')).toBe(NOW);
    expect(sqlTimeMs(null)).toBeNull();
  });
});
