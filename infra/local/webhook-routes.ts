import type { IncomingMessage } from 'node:http';
import { type MessageAttributeValue, SendMessageCommand } from '@aws-sdk/client-sqs';
import { parseTraceparent, TRACEPARENT, TRACESTATE } from '../../shared/core/trace-context.js';
import {
  documentReceivedMessage,
  isDocumentKey,
  isSubjectId,
  MAX_SUBJECT_ID,
  webhookEventId,
} from '../../shared/core/webhook/event.js';
import {
  type LocalRoute,
  type LocalRouteContext,
  readBody,
  readJsonObject,
  sendJson,
  traceHeadersOf,
} from './local-http.js';
import { DOCUMENT_RECEIVED_QUEUE } from './queues.js';

/** A request the webhook sink received. */
export interface SinkEntry {
  readonly receivedAt: string;
  /** Lower-case names, as received. */
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

const MAX_BODY_BYTES = 64 * 1024;
const MAX_SINK_ENTRIES = 1000;
const DEMO_TENANT = 'demo';

/** The body as text; undefined when it exceeds MAX_BODY_BYTES. */
const readText = async (request: IncomingMessage) =>
  (await readBody(request, MAX_BODY_BYTES))?.toString('utf8');

/**
 * `POST /_local/documents/received` (what the access point does, for tenant `demo`) and the
 * `/_local/webhook-sink` receiver that SUBJECT 1's WEBHOOK_URL points to (CONTRACT.md section 3).
 */
export function webhookLocalRoutes(context: LocalRouteContext): [string, LocalRoute][] {
  const sink: SinkEntry[] = [];

  const documentReceived: LocalRoute = async (request, response) => {
    const input = await readJsonObject(
      request,
      response,
      MAX_BODY_BYTES,
      'The body must be a JSON object like {"subjectId":1,"documentId":123456}',
    );
    if (!input) return;
    const { subjectId, documentId } = input;
    if (!isSubjectId(subjectId)) {
      return sendJson(response, 400, {
        message: `"subjectId" must be a positive integer up to ${MAX_SUBJECT_ID}`,
      });
    }
    if (!isDocumentKey(documentId)) {
      return sendJson(response, 400, { message: '"documentId" must be a positive integer' });
    }
    const event = { tenant: DEMO_TENANT, subjectId: subjectId as number, documentId: documentId as number };
    // As an access point may (CONTRACT 8a): the event in the caller's trace, a child of the span
    // this stack answers with (stack.ts), its `traceparent` a message attribute the delivery continues.
    const trace: Record<string, MessageAttributeValue> = {};
    const traceparent = response.getHeader(TRACEPARENT);
    const incoming = traceHeadersOf(request);
    if (typeof traceparent === 'string') {
      trace[TRACEPARENT] = { DataType: 'String', StringValue: traceparent };
      if (incoming.tracestate && parseTraceparent(incoming.traceparent)) {
        trace[TRACESTATE] = { DataType: 'String', StringValue: incoming.tracestate };
      }
    }
    let sent: { MessageId?: string };
    try {
      sent = await context.sqs.send(
        new SendMessageCommand({
          QueueUrl: context.queueUrls.get(DOCUMENT_RECEIVED_QUEUE),
          MessageBody: documentReceivedMessage(event),
          // As the access point must: the tenant as the message group of SQS fair queues.
          MessageGroupId: event.tenant,
          ...(Object.keys(trace).length > 0 ? { MessageAttributes: trace } : {}),
        }),
      );
    } catch {
      // Not queued, so not accepted: the access point sends it again later.
      return sendJson(response, 503, { message: 'The document-received queue is not reachable; try again' });
    }
    sendJson(response, 202, { ...event, webhookId: webhookEventId(event), messageId: sent.MessageId });
  };

  const receive: LocalRoute = async (request, response) => {
    const body = (await readText(request)) ?? '';
    sink.push({ receivedAt: new Date().toISOString(), headers: { ...request.headers }, body });
    if (sink.length > MAX_SINK_ENTRIES) sink.splice(0, sink.length - MAX_SINK_ENTRIES);
    sendJson(response, 200, { status: 'success' });
  };

  const list: LocalRoute = async (_request, response) => sendJson(response, 200, sink);

  return [
    ['POST /_local/documents/received', documentReceived],
    ['POST /_local/webhook-sink', receive],
    ['GET /_local/webhook-sink', list],
  ];
}

const SUBJECT_WEBHOOK_PATH = /^\/_local\/subjects\/([^/]+)\/webhook$/;
/** SUBJECT's column lengths (infra/sql/mssql/demo/010-erp-schema.sql, infra/sql/embedded/010-erp-schema.sql). */
const MAX_URL_LENGTH = 500;
const MAX_SECRET_LENGTH = 200;

/**
 * `PUT /_local/subjects/{subjectId}/webhook` with `{"url":…,"secret":…}` (either may be omitted,
 * null clears): what the ERP does when a subject's WEBHOOK_URL or SECRET_WEBHOOK changes, for
 * tenant `demo` (CONTRACT.md section 3). Answers the subject's new values.
 */
export function subjectWebhookRoute(context: LocalRouteContext) {
  const db = context.database;
  const p = (index: number) => db.dialect.param(index);
  const route =
    (subjectText: string): LocalRoute =>
    async (request, response) => {
      const subjectId = /^\d{1,10}$/.test(subjectText) ? Number(subjectText) : Number.NaN;
      if (!isSubjectId(subjectId)) {
        return sendJson(response, 400, {
          message: `The subject id in the path must be a positive integer up to ${MAX_SUBJECT_ID}`,
        });
      }
      const body = await readJsonObject(
        request,
        response,
        MAX_BODY_BYTES,
        'The body must be a JSON object like {"url":"https://…","secret":"…"} (either may be omitted, null clears)',
      );
      if (!body) return;
      const unknown = Object.keys(body).filter((key) => key !== 'url' && key !== 'secret');
      if (unknown.length > 0) {
        return sendJson(response, 400, {
          message: `Unknown field "${unknown[0]}": only "url" and "secret" are changed here`,
        });
      }
      const columns: [string, unknown][] = [];
      for (const [key, column, max] of [
        ['url', 'WEBHOOK_URL', MAX_URL_LENGTH],
        ['secret', 'SECRET_WEBHOOK', MAX_SECRET_LENGTH],
      ] as const) {
        if (!(key in body)) continue;
        const value = body[key];
        if (value !== null && (typeof value !== 'string' || value.length > max)) {
          return sendJson(response, 400, {
            message: `"${key}" must be a string of at most ${max} characters, or null`,
          });
        }
        columns.push([column, value]);
      }
      const select = `SELECT "ID" AS "subjectId", "WEBHOOK_URL" AS "url", "SECRET_WEBHOOK" AS "secret"
        FROM dbo."SUBJECT" WHERE "ID" = ${p(1)}`;
      if (columns.length > 0) {
        const assignments = columns.map(([column], index) => `"${column}" = ${p(index + 2)}`).join(', ');
        await db.query(`UPDATE dbo."SUBJECT" SET ${assignments} WHERE "ID" = ${p(1)}`, [
          subjectId,
          ...columns.map(([, value]) => value),
        ]);
      }
      const [row] = await db.query(select, [subjectId]);
      if (!row)
        return sendJson(response, 404, { message: `Subject ${subjectId} does not exist in tenant demo` });
      sendJson(response, 200, { subjectId, url: row.url ?? null, secret: row.secret ?? null });
    };
  return {
    match(method: string | undefined, pathname: string): LocalRoute | undefined {
      if (method !== 'PUT') return undefined;
      const found = SUBJECT_WEBHOOK_PATH.exec(pathname);
      return found ? route(found[1]!) : undefined;
    },
  };
}
