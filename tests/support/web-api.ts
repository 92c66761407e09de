import { readFileSync } from 'node:fs';
import { parseWebApiSettings } from '../../shared/config/tenants.js';
import { signatureHeader } from '../../shared/core/web-api/signature.js';

export interface SignOptions {
  readonly apiKey?: string;
  readonly apiHash?: string;
  /**
   * Unix seconds of the signature. By default the latest second (now or up to 120 s before) not yet
   * used for the same body and key in this process, so that two calls with the same body are two
   * requests, not a replay (the signature covers only `t` and the body, not the path).
   */
  readonly time?: number;
  readonly contentType?: string;
  readonly accept?: string;
  /** Further headers (an `Idempotency-Key`, say). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** Time stamps already signed, per key and body. */
const signedTimes = new Map<string, Set<number>>();

function unusedTime(apiHash: string, bytes: Buffer): number {
  const key = `${apiHash}\u0000${bytes.toString('base64')}`;
  const used = signedTimes.get(key) ?? new Set<number>();
  signedTimes.set(key, used);
  const now = Math.floor(Date.now() / 1000);
  let t = now;
  while (used.has(t) && t > now - 120) t--;
  used.add(t);
  return t;
}

/** A Web API call as a client sends it: the body's bytes and the signed headers. */
export function signedCall(body: string | Buffer, options: SignOptions = {}) {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const headers: Record<string, string> = {
    'content-type':
      options.contentType ??
      (bytes.subarray(0, 1).toString() === '<' ? 'application/xml' : 'application/json'),
    'x-api-key': options.apiKey ?? 'demo-api-key',
    'x-svc-signature': signatureHeader(
      options.apiHash ?? 'demo-api-hash',
      bytes,
      options.time ?? unusedTime(options.apiHash ?? 'demo-api-hash', bytes),
    ),
  };
  if (options.accept) headers.accept = options.accept;
  Object.assign(headers, options.headers);
  return { body: bytes, headers };
}

/**
 * A signed Web API call to a running stack (`baseUrl`: `http://127.0.0.1:<port>`, tenant `demo`),
 * redirects not followed, so a 303 to a large answer is seen as such.
 */
export async function postSigned(
  baseUrl: string,
  path: 'getData' | 'getDataAsync',
  body: string,
  options: SignOptions = {},
) {
  const signed = signedCall(body, options);
  const response = await fetch(`${baseUrl}/demo/WebAPI/${path}`, {
    method: 'POST',
    headers: signed.headers,
    body: signed.body,
    redirect: 'manual',
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** A JSON envelope as text. */
export const envelope = (vltyp: number, params?: Record<string, unknown>[]) =>
  JSON.stringify(params === undefined ? { vltyp } : { vltyp, params });

/**
 * The demo tenant's Web API settings as the local stack's registry (infra/local/tenants.json) has
 * them, its applications among them: for registries a test builds of its own.
 */
export const DEMO_WEB_API: Record<string, unknown> = JSON.parse(
  readFileSync(new URL('../../infra/local/tenants.json', import.meta.url), 'utf8'),
).tenants.demo.webApi;

/** The demo tenant as far as its Web API store needs it (tenantWebApiStore). */
export const DEMO_WEB_API_TENANT = { id: 'demo', webApi: parseWebApiSettings(DEMO_WEB_API) };
