import http from 'node:http';
import https from 'node:https';
import type { WebhookRequest, WebhookSender, WebhookSendResult } from '../../core/delivery/sender.js';
import { FORBIDDEN_ADDRESSES, forbiddenAddressReason, ipLiteralHost } from '../../core/webhook/target.js';
import {
  type AddressResolver,
  ForbiddenAddressError,
  guardedLookup,
  systemResolver,
} from './guarded-lookup.js';

export interface HttpWebhookSenderOptions {
  /** Lets the sender connect to loopback and private addresses (local stack only). */
  readonly allowPrivateTargets: boolean;
  /** Time from the start of an attempt to the answer's status line. */
  readonly timeoutMs: number;
  readonly resolve?: AddressResolver;
}

export interface HttpWebhookSender extends WebhookSender {
  /** Closes idle keep-alive connections. */
  close(): void;
}

function describeError(error: NodeJS.ErrnoException): string {
  const message = error.message || 'request failed';
  return error.code && !message.includes(error.code) ? `${error.code}: ${message}` : message;
}

/**
 * POSTs webhooks with `http.request`/`https.request`: no redirects followed, one overall time-out,
 * IP literals and resolved addresses checked against the forbidden ranges before connecting.
 */
export function createHttpWebhookSender(options: HttpWebhookSenderOptions): HttpWebhookSender {
  const lookup = guardedLookup(options.resolve ?? systemResolver, options.allowPrivateTargets);
  // Keep-alive helps a batch of events for one receiver; idle sockets go before Lambda freezes them long.
  const agents = {
    'http:': new http.Agent({ keepAlive: true, timeout: 5000, maxSockets: 32 }),
    'https:': new https.Agent({ keepAlive: true, timeout: 5000, maxSockets: 32 }),
  };

  function send(
    request: WebhookRequest,
    sendOptions: { timeoutMs?: number } = {},
  ): Promise<WebhookSendResult> {
    const timeoutMs = Math.min(sendOptions.timeoutMs ?? options.timeoutMs, options.timeoutMs);
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const { url } = request;
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      return Promise.resolve({ kind: 'refused', reason: `${url.protocol} is not http(s)`, durationMs: 0 });
    }
    // Node connects to IP literals without calling `lookup`: they are judged here.
    const literal = ipLiteralHost(url);
    const literalReason =
      literal !== undefined && !options.allowPrivateTargets ? forbiddenAddressReason(literal) : undefined;
    if (literalReason) {
      return Promise.resolve({
        kind: 'refused',
        reason: `target address ${literal} is ${literalReason}`,
        durationMs: 0,
      });
    }

    return new Promise<WebhookSendResult>((settle) => {
      let settled = false;
      const done = (result: WebhookSendResult) => {
        if (settled) return;
        settled = true;
        settle(result);
      };
      const transport = url.protocol === 'https:' ? https : http;
      let outgoing: http.ClientRequest;
      try {
        outgoing = transport.request(url, {
          method: 'POST',
          headers: { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) },
          agent: agents[url.protocol as 'http:' | 'https:'],
          lookup,
          // Node checks the address it is about to connect to as well, whatever the look-up said.
          ...(options.allowPrivateTargets ? {} : { blockList: FORBIDDEN_ADDRESSES }),
        });
      } catch (error) {
        // Node refuses a header value it cannot send (a SECRET_WEBHOOK with "č" or a line break):
        // a failed attempt to record like any other, not an exception that loses the attempt.
        done({ kind: 'error', error: describeError(error as NodeJS.ErrnoException), durationMs: elapsed() });
        return;
      }
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        outgoing.destroy(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' }));
      }, timeoutMs);
      outgoing.on('response', (response) => {
        const retryAfter = response.headers['retry-after'];
        done({ kind: 'response', status: response.statusCode ?? 0, retryAfter, durationMs: elapsed() });
        // The body is not needed; reading it to the end lets the connection be reused.
        response.on('end', () => clearTimeout(timer));
        response.on('error', () => undefined);
        response.resume();
      });
      outgoing.on('error', (error: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        if (error instanceof ForbiddenAddressError || error.code === 'ERR_IP_BLOCKED') {
          done({ kind: 'refused', reason: error.message, durationMs: elapsed() });
        } else {
          done({
            kind: 'error',
            error: describeError(error),
            durationMs: elapsed(),
            ...(timedOut ? { timedOut: true } : {}),
          });
        }
      });
      outgoing.end(request.body);
    });
  }

  return {
    send,
    close() {
      agents['http:'].destroy();
      agents['https:'].destroy();
    },
  };
}
