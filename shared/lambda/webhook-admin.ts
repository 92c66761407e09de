import type { Context } from 'aws-lambda';
import { createEmbeddedWebhookAdminStore } from '../adapters/embedded/webhook-admin-store.js';
import { createMssqlWebhookAdminStore } from '../adapters/mssql/webhook-admin-store.js';
import { createSqsDocumentEventQueue } from '../adapters/sqs/document-event-queue.js';
import { byDialect, openDatabase } from '../config/databases.js';
import { queueUrl } from '../config/queues.js';
import { ConfigurationError } from '../config/settings.js';
import { findTenant } from '../config/tenant-registry.js';
import type { DatabaseConnection, TenantConfig } from '../config/tenants.js';
import type { Database } from '../core/database.js';
import { describeError } from '../core/log.js';
import { notifyAgain } from '../core/notifications/notifier.js';
import {
  type DocumentEventQueue,
  parseWebhookAdminRequest,
  runWebhookAdmin,
  WebhookAdminError,
} from '../core/webhook/admin.js';
import { notificationQueue, subscriptionStore } from './notifications.js';
import { logFormatFromEnv, reportPermissionDenied, serviceLog } from './observability.js';

/** What the admin function needs; tests replace any of it. */
export interface WebhookAdminDependencies {
  readonly tenant: (id: string) => Promise<TenantConfig | undefined>;
  readonly database: (connection: DatabaseConnection) => Promise<Database>;
  readonly queue: () => DocumentEventQueue;
  readonly now?: () => number;
}

function defaultQueue(): DocumentEventQueue {
  return createSqsDocumentEventQueue(queueUrl('documentReceived'));
}

const defaults: WebhookAdminDependencies = {
  tenant: (id) => findTenant(id, serviceLog()),
  database: openDatabase,
  queue: defaultQueue,
};

/** The answer to a request that cannot be carried out: what is wrong, never a stack or engine text. */
const refusal = (message: string) => ({ ok: false, error: message });

/**
 * The webhook admin function (CONTRACT.md section 6), invoked with the Lambda Invoke API only
 * (`aws lambda invoke`, `npm run webhooks`): resend, recover, enable, status. Every answer is a JSON
 * object; a bad event or a failure is `{"ok":false,"error":"…"}`, never a crash, and each call is
 * one log line (what was asked and how it ended).
 */
export function webhookAdminHandler(overrides: Partial<WebhookAdminDependencies> = {}) {
  const deps: WebhookAdminDependencies = { ...defaults, ...overrides };
  logFormatFromEnv();

  return async function webhookAdmin(event: unknown, context?: Context): Promise<Record<string, unknown>> {
    const fields: Record<string, unknown> = {
      requestId: context?.awsRequestId,
      function: context?.functionName,
    };
    let answer: Record<string, unknown>;
    try {
      const request = parseWebhookAdminRequest(event);
      Object.assign(fields, { action: request.action, tenant: request.tenant });
      const tenant = await deps.tenant(request.tenant);
      if (!tenant) throw new WebhookAdminError(`Unknown tenant "${request.tenant}"`);
      const db = await deps.database(tenant.database);
      if (request.action === 'notify') {
        // Change notifications (CONTRACT 4c): a fresh table.changed recovers what a receiver missed.
        const outcome = await notifyAgain(
          {
            tenant: tenant.id,
            store: subscriptionStore(db, tenant.id),
            queue: notificationQueue(),
            now: deps.now,
          },
          request.subscriptionId !== undefined
            ? { tenant: tenant.id, subscriptionId: request.subscriptionId }
            : { tenant: tenant.id, since: request.since! },
        );
        answer = {
          ok: true,
          action: 'notify',
          tenant: tenant.id,
          count: outcome.notified.length,
          ...outcome,
        };
        serviceLog().info('webhook admin', { ...fields, ok: true, count: answer.count });
        return answer;
      }
      const store = byDialect(db, {
        mssql: (mssql) => createMssqlWebhookAdminStore(mssql, tenant.id),
        embedded: (embedded) => createEmbeddedWebhookAdminStore(embedded, tenant.id),
      });
      answer = await runWebhookAdmin(request, { store, queue: deps.queue(), now: deps.now });
      serviceLog().info('webhook admin', { ...fields, ok: true, count: answer.count });
    } catch (error) {
      if (error instanceof WebhookAdminError) {
        serviceLog().warn('webhook admin', { ...fields, ok: false, error: error.message });
        return refusal(error.message);
      }
      const denied = reportPermissionDenied(error, fields);
      if (denied) return { ...refusal(denied.message), code: 'database_permission_denied' };
      serviceLog().error('webhook admin failed', { ...fields, ...describeError(error) });
      const what =
        error instanceof ConfigurationError ? error.message : 'the database or queue is not reachable';
      return refusal(`The request could not be carried out: ${what}; try again`);
    }
    return answer;
  };
}
