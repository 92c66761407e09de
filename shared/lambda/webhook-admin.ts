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
import type { TraceContext } from '../core/trace-context.js';
import { recording, recordSpan, spanClock } from '../core/tracing.js';
import {
  type DocumentEventQueue,
  parseWebhookAdminRequest,
  runWebhookAdmin,
  WebhookAdminError,
} from '../core/webhook/admin.js';
import { notificationQueue, subscriptionStore } from './notifications.js';
import { logFormatFromEnv, reportPermissionDenied, serviceLog } from './observability.js';
import { flushSpans, invokerTrace, startTracing } from './tracing.js';

/** What the admin function needs; tests replace any of it. */
export interface WebhookAdminDependencies {
  readonly tenant: (id: string) => Promise<TenantConfig | undefined>;
  /** The tenant's database; its statements are spans of the call's `trace`. */
  readonly database: (connection: DatabaseConnection, trace?: TraceContext) => Promise<Database>;
  /** The document-received queue; what it sends continues the call's `trace`. */
  readonly queue: (trace?: TraceContext) => DocumentEventQueue;
  readonly now?: () => number;
}

function defaultQueue(trace?: TraceContext): DocumentEventQueue {
  return createSqsDocumentEventQueue(queueUrl('documentReceived'), undefined, trace);
}

const defaults: WebhookAdminDependencies = {
  tenant: (id) => findTenant(id, serviceLog()),
  database: openDatabase,
  queue: defaultQueue,
};

/** The answer to a request that cannot be carried out: what is wrong, never a stack or engine text. */
const refusal = (message: string) => ({ ok: false, error: message });

/**
 * One call as its log line and its span see it: the line's fields (the request id, then what was
 * asked once it is known: `action`, `tenant`) and, when it did not succeed, the error's kind.
 */
interface AdminCall {
  fields: Record<string, unknown>;
  errorType?: 'refused' | 'database_permission_denied' | 'internal_error';
}

/**
 * The webhook admin function (CONTRACT.md section 6), invoked with the Lambda Invoke API only
 * (`aws lambda invoke`, `npm run webhooks`): resend, recover, enable, status. Every answer is a JSON
 * object; a bad event or a failure is `{"ok":false,"error":"…"}`, never a crash, and each call is
 * one log line (what was asked and how it ended). Each call is a span in the invoker's trace
 * (CONTRACT 8a: the invoke's client context, `invokerTrace`), its trace id on the call's lines,
 * and the events it sends again are delivered in that trace.
 */
export function webhookAdminHandler(overrides: Partial<WebhookAdminDependencies> = {}) {
  const deps: WebhookAdminDependencies = { ...defaults, ...overrides };
  logFormatFromEnv();

  async function carryOut(
    event: unknown,
    trace: TraceContext,
    call: AdminCall,
  ): Promise<Record<string, unknown>> {
    const { fields } = call;
    let answer: Record<string, unknown>;
    try {
      const request = parseWebhookAdminRequest(event);
      Object.assign(fields, { action: request.action, tenant: request.tenant });
      const tenant = await deps.tenant(request.tenant);
      if (!tenant) throw new WebhookAdminError(`Unknown tenant "${request.tenant}"`);
      const db = await deps.database(tenant.database, trace);
      if (request.action === 'notify') {
        // Change notifications (CONTRACT 4c): a fresh table.changed recovers what a receiver missed.
        const notified = await notifyAgain(
          {
            tenant: tenant.id,
            store: subscriptionStore(db, tenant.id),
            // Delivered in this call's trace.
            queue: notificationQueue(trace),
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
          count: notified.notified.length,
          ...notified,
        };
        serviceLog().info('webhook admin', { ...fields, ok: true, count: answer.count });
        return answer;
      }
      const store = byDialect(db, {
        mssql: (mssql) => createMssqlWebhookAdminStore(mssql, tenant.id),
        embedded: (embedded) => createEmbeddedWebhookAdminStore(embedded, tenant.id),
      });
      answer = await runWebhookAdmin(request, { store, queue: deps.queue(trace), now: deps.now });
      serviceLog().info('webhook admin', { ...fields, ok: true, count: answer.count });
    } catch (error) {
      if (error instanceof WebhookAdminError) {
        call.errorType = 'refused';
        serviceLog().warn('webhook admin', { ...fields, ok: false, error: error.message });
        return refusal(error.message);
      }
      const denied = reportPermissionDenied(error, fields);
      if (denied) {
        call.errorType = 'database_permission_denied';
        return { ...refusal(denied.message), code: 'database_permission_denied' };
      }
      call.errorType = 'internal_error';
      serviceLog().error('webhook admin failed', { ...fields, ...describeError(error) });
      const what =
        error instanceof ConfigurationError ? error.message : 'the database or queue is not reachable';
      return refusal(`The request could not be carried out: ${what}; try again`);
    }
    return answer;
  }

  return async function webhookAdmin(event: unknown, context?: Context): Promise<Record<string, unknown>> {
    // The SDK comes in with the first call when tracing is on (tracing.ts), else nothing.
    await startTracing();
    const trace = invokerTrace(context);
    const startTime = recording(trace) ? spanClock() : 0;
    const call: AdminCall = {
      fields: { requestId: context?.awsRequestId, function: context?.functionName, traceId: trace.traceId },
    };
    try {
      return await carryOut(event, trace, call);
    } finally {
      if (startTime) {
        recordInvokeSpan(context?.functionName, trace, startTime, call);
        // Before the answer: Lambda freezes the instance once the handler returns.
        await flushSpans();
      }
    }
  };
}

/**
 * The call's span (CONTRACT 8a), the server side of the invoke (OpenTelemetry's FaaS conventions):
 * named by the function and the action (`webhookAdmin resend`), a child of the invoker's span; the
 * tenant and, when it did not succeed, the kind of error. A refusal is the caller's error, not a
 * failed span.
 */
function recordInvokeSpan(
  functionName: string | undefined,
  trace: TraceContext,
  startTime: number,
  { fields, errorType }: AdminCall,
): void {
  const name = functionName ?? 'webhookAdmin';
  recordSpan({
    name: fields.action ? `${name} ${fields.action}` : name,
    kind: 'server',
    context: trace,
    startTime,
    endTime: spanClock(),
    attributes: {
      'faas.trigger': 'other',
      ...(typeof fields.tenant === 'string' ? { tenant: fields.tenant } : {}),
      ...(errorType ? { 'error.type': errorType } : {}),
    },
    failed: errorType !== undefined && errorType !== 'refused',
  });
}
