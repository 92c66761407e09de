import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request the receiver got. */
export interface ReceivedWebhook {
  readonly path: string;
  readonly method: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** `performance.now()` when the request arrived. */
  readonly at: number;
}

export interface Reply {
  readonly status: number;
  readonly headers?: Record<string, string>;
  readonly delayMs?: number;
  /** A body of this many bytes instead of the small JSON one (a receiver that sends a huge answer). */
  readonly bodyBytes?: number;
}

/** How a path answers: a fixed reply, or one per request in order (the last one repeats). */
export type Behaviour = Reply | readonly Reply[];

export interface WebhookReceiver {
  readonly url: string;
  readonly port: number;
  readonly received: ReceivedWebhook[];
  /** TCP connections accepted so far (a refused target must leave this unchanged). */
  readonly connections: () => number;
  on(path: string, behaviour: Behaviour): void;
  receivedOn(path: string): ReceivedWebhook[];
  /** Resolves once `path` got `count` requests; rejects after `timeoutMs`. */
  waitFor(path: string, count: number, timeoutMs?: number): Promise<ReceivedWebhook[]>;
  close(): Promise<void>;
}

/** A real HTTP receiver on 127.0.0.1 (tests may only talk to loopback). Unknown paths answer 200. */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const behaviours = new Map<string, Behaviour>();
  const served = new Map<string, number>();
  let connections = 0;

  const server = createServer((request, response) => {
    const at = performance.now();
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = new URL(request.url ?? '/', 'http://x').pathname;
      received.push({
        path,
        method: request.method ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at,
      });
      const count = served.get(path) ?? 0;
      served.set(path, count + 1);
      const behaviour = behaviours.get(path) ?? { status: 200 };
      const reply = Array.isArray(behaviour)
        ? (behaviour[Math.min(count, behaviour.length - 1)] as Reply)
        : (behaviour as Reply);
      const answer = () => {
        if (response.destroyed) return;
        response.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
        if (reply.bodyBytes !== undefined) response.end(Buffer.alloc(reply.bodyBytes, 0x20));
        else response.end(JSON.stringify({ status: reply.status < 300 ? 'success' : 'error' }));
      };
      if (reply.delayMs) setTimeout(answer, reply.delayMs);
      else answer();
    });
  });
  server.on('connection', () => {
    connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  const receivedOn = (path: string) => received.filter((r) => r.path === path);
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    connections: () => connections,
    on: (path, behaviour) => behaviours.set(path, behaviour),
    receivedOn,
    async waitFor(path, count, timeoutMs = 15_000) {
      const deadline = performance.now() + timeoutMs;
      while (receivedOn(path).length < count) {
        if (performance.now() > deadline) {
          throw new Error(`${path} got ${receivedOn(path).length} of ${count} requests in ${timeoutMs} ms`);
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return receivedOn(path);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
