import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Database } from '../../shared/core/database.js';
import { docsLocalRoutes } from './docs-routes.js';
import { webhookLocalRoutes } from './webhook-routes.js';

/** What local-only routes can reach. */
export interface LocalRouteContext {
  readonly database: Database;
  readonly sqs: SQSClient;
  /** Queue URLs by queue name. */
  readonly queueUrls: ReadonlyMap<string, string>;
}

export type LocalRoute = (request: IncomingMessage, response: ServerResponse, url: URL) => Promise<void>;

export function sendJson(response: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  response.end(body);
}

/** Reads a request's body whole; undefined, and the rest left unread, once it exceeds `maxBytes`. */
export async function readBody(
  request: IncomingMessage,
  maxBytes = Number.POSITIVE_INFINITY,
): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

export async function readJson(request: IncomingMessage): Promise<unknown> {
  const text = (await readBody(request))?.toString('utf8');
  return text ? JSON.parse(text) : undefined;
}

/** Routes served only by the local stack, only on loopback, keyed `METHOD /path`. */
export function createLocalRoutes(context: LocalRouteContext): Map<string, LocalRoute> {
  return new Map<string, LocalRoute>([
    [
      'GET /health',
      async (_request, response) => {
        await context.database.query('SELECT 1');
        sendJson(response, 200, { status: 'ok' });
      },
    ],
    ...webhookLocalRoutes(context),
    ...docsLocalRoutes(),
  ]);
}
