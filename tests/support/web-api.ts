import { signatureHeader } from '../../shared/core/web-api/signature.js';

export interface SignOptions {
  readonly apiKey?: string;
  readonly apiHash?: string;
  /**
   * Unix seconds of the signature. By default now, minus one more second for every call of this
   * process (within 120 s), so that two calls with the same body are two requests, not a replay.
   */
  readonly time?: number;
  readonly contentType?: string;
  readonly accept?: string;
}

let calls = 0;

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
      options.time ?? Math.floor(Date.now() / 1000) - (calls++ % 120),
    ),
  };
  if (options.accept) headers.accept = options.accept;
  return { body: bytes, headers };
}

/** A JSON envelope as text. */
export const envelope = (vltyp: number, params?: Record<string, unknown>[]) =>
  JSON.stringify(params === undefined ? { vltyp } : { vltyp, params });
