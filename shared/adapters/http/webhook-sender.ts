import { promises as dns, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { WebhookRequest, WebhookSender, WebhookSendResult } from '../../core/webhook/deliver.js';
import { FORBIDDEN_ADDRESSES, forbiddenAddressReason, ipLiteralHost } from '../../core/webhook/target.js';

/** Resolves a host name to every address it has (the system resolver unless a test passes its own). */
export type AddressResolver = (hostname: string) => Promise<readonly LookupAddress[]>;

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

const systemResolver: AddressResolver = (hostname) => dns.lookup(hostname, { all: true });

/** The target's addresses include one the service must not connect to. */
class RefusedTargetError extends Error {
  override readonly name = 'RefusedTargetError';
}

/**
 * A `lookup` for `http.request` that refuses forbidden addresses. The socket connects to exactly
 * the addresses checked here, so a name that resolves differently a moment later (DNS rebinding)
 * gains nothing.
 */
function guardedLookup(resolve: AddressResolver, allowPrivateTargets: boolean): LookupFunction {
  return (hostname, options, callback) => {
    const fail = (error: NodeJS.ErrnoException) => (callback as (e: NodeJS.ErrnoException) => void)(error);
    resolve(hostname).then((addresses) => {
      if (!allowPrivateTargets) {
        for (const { address } of addresses) {
          const reason = forbiddenAddressReason(address);
          if (reason)
            return fail(new RefusedTargetError(`${hostname} resolves to ${address}, which is ${reason}`));
        }
      }
      const family = options.family === 4 || options.family === 6 ? options.family : undefined;
      const usable = family ? addresses.filter((a) => a.family === family) : [...addresses];
      const first = usable[0];
      if (!first)
        return fail(Object.assign(new Error(`no address found for ${hostname}`), { code: 'ENOTFOUND' }));
      if (options.all) return callback(null, usable);
      callback(null, first.address, first.family);
    }, fail);
  };
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
        if (error instanceof RefusedTargetError || error.code === 'ERR_IP_BLOCKED') {
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
