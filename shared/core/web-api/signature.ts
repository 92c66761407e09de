import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { WebApiError, WebApiErrorCode } from './envelope.js';

/**
 * The request signature of CONTRACT.md section 5: `x-svc-signature: t=<unix seconds>,v1=<hex>`,
 * hex = HMAC-SHA256 keyed with the application's API hash over the bytes `<t>.<raw body>`, `<t>`
 * exactly as sent. Several `v1=` may be sent while a key is rotated; one match suffices.
 *
 * The header is a comma-separated list of `key=value` items (spaces allowed around an item, not
 * inside it). `t` is 1 to 15 ASCII digits, nothing else (no sign, no spaces, no fraction); leading
 * zeros are allowed and are part of the signed bytes, so `t=0170…` is signed as `0170….<body>`.
 */

const HEX_SHA256 = /^[0-9a-f]{64}$/i;
/** Up to 15 digits, so that a time stamp in milliseconds is read and refused as one (104). */
const TIMESTAMP = /^[0-9]{1,15}$/;
/** A time stamp beyond this (the year 5138 in seconds) was written in milliseconds. */
const MILLISECONDS_FROM = 1e11;

/** The signed bytes: `t` as the header carries it (never re-written from its number), a dot, the raw body. */
function signedPayload(timestamp: number | string, body: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from(`${timestamp}.`, 'utf8'), body]);
}

/**
 * The `v1` value for a body: lower-case hex HMAC-SHA256 of `<t>.<body>` keyed with the API hash;
 * `timestamp` as the header will carry it.
 */
export function signBody(apiHash: string, timestamp: number | string, body: Uint8Array): string {
  return createHmac('sha256', apiHash).update(signedPayload(timestamp, body)).digest('hex');
}

/** The complete header value a client sends: `t=<timestamp>,v1=<hex>`. */
export function signatureHeader(
  apiHash: string,
  body: Uint8Array,
  timestamp: number | string = Math.floor(Date.now() / 1000),
): string {
  return `t=${timestamp},v1=${signBody(apiHash, timestamp, body)}`;
}

export interface ParsedSignature {
  readonly timestamp: number;
  /** `t` exactly as sent: what was signed. */
  readonly timestampText: string;
  /** The `v1` values, decoded; other schemes are ignored. */
  readonly candidates: readonly Buffer[];
}

/** Parses `t=…,v1=…[,v1=…]`; undefined when the header does not have that form. */
export function parseSignatureHeader(header: string): ParsedSignature | undefined {
  let timestampText: string | undefined;
  const candidates: Buffer[] = [];
  for (const part of header.split(',')) {
    const item = part.trim();
    const equals = item.indexOf('=');
    if (equals < 0) return undefined;
    const key = item.slice(0, equals);
    const value = item.slice(equals + 1);
    if (key === 't') {
      if (timestampText !== undefined || !TIMESTAMP.test(value)) return undefined;
      timestampText = value;
    } else if (key === 'v1') {
      if (!HEX_SHA256.test(value)) return undefined;
      candidates.push(Buffer.from(value, 'hex'));
    }
  }
  if (timestampText === undefined || candidates.length === 0) return undefined;
  return { timestamp: Number(timestampText), timestampText, candidates };
}

export interface VerifiedSignature {
  readonly timestamp: number;
  /** SHA-256 of the signed bytes: the same request, however its header is written, has the same digest. */
  readonly requestDigest: string;
}

/**
 * Checks a signature header against the body: 401/103 when it is malformed or no `v1` matches a
 * signature keyed with any of `apiHashes` (the application's, several while one is rotated;
 * compared in constant time), then 401/104 when its time stamp is more than `maxSkewSeconds` from now.
 */
export function verifySignature(
  header: string,
  apiHashes: string | readonly string[],
  body: Uint8Array,
  nowSeconds: number,
  maxSkewSeconds: number,
): VerifiedSignature {
  const parsed = parseSignatureHeader(header);
  if (!parsed) {
    throw new WebApiError(
      WebApiErrorCode.badSignature,
      'x-svc-signature must be t=<unix seconds>,v1=<hex HMAC-SHA256>, t being 1 to 15 digits',
    );
  }
  const payload = signedPayload(parsed.timestampText, body);
  let matched = false;
  // Every candidate is compared with every hash's signature, so the time taken says neither which
  // candidate nor which hash matched.
  for (const apiHash of typeof apiHashes === 'string' ? [apiHashes] : apiHashes) {
    const expected = createHmac('sha256', apiHash).update(payload).digest();
    for (const candidate of parsed.candidates) {
      if (timingSafeEqual(candidate, expected)) matched = true;
    }
  }
  if (!matched) {
    throw new WebApiError(
      WebApiErrorCode.badSignature,
      // The usual causes, named: what a newcomer did wrong is nearly always one of them.
      'The signature does not match the request body (HMAC-SHA256 of "<t>.<body>" keyed with the API hash). ' +
        'Usual causes: the body was changed after it was signed (JSON re-encoded or pretty-printed, newlines ' +
        'stripped or added: send the signed file as it is, with curl --data-binary @file, not -d), or it was ' +
        "signed with another hash than this key's API hash",
    );
  }
  if (Math.abs(nowSeconds - parsed.timestamp) > maxSkewSeconds) {
    const unit = parsed.timestamp > MILLISECONDS_FROM ? ' (t is in seconds, not milliseconds)' : '';
    throw new WebApiError(
      WebApiErrorCode.expiredSignature,
      `The signature time stamp t=${parsed.timestampText} is more than ${maxSkewSeconds} s away from the server time${unit}`,
    );
  }
  return { timestamp: parsed.timestamp, requestDigest: createHash('sha256').update(payload).digest('hex') };
}
