import { randomUUID } from 'node:crypto';

/** Port: object storage for answers too large to return inline. */
export interface LargeObjectStore {
  /** Starts a streamed upload of one object. */
  startUpload(key: string, contentType: string, contentDisposition?: string): LargeObjectUpload;
  /** A time-limited GET URL for an uploaded object. */
  presignGet(key: string, expiresSeconds: number): Promise<string>;
}

/** The code of the error (HTTP 503) a {@link LargeObjectStore} throws when it cannot be reached. */
export const ANSWER_STORE_UNAVAILABLE = 'storage_unavailable';

export interface LargeObjectUpload {
  /** Resolves when the chunk is accepted (honours backpressure). */
  write(chunk: Buffer): Promise<void>;
  complete(): Promise<void>;
  abort(): Promise<void>;
}

/**
 * What a read answers: a body to return as it is, or a redirect to where it was stored. A text
 * body fits the transport once written as a JSON string (see {@link AnswerLimits.inlineEncodedLimitBytes}).
 */
export type Answer =
  | { readonly kind: 'inline'; readonly body: string | Buffer; readonly contentType: string }
  | {
      readonly kind: 'redirect';
      readonly location: string;
      /** The stored object's key (presigned again for a replay of the answer). */
      readonly key?: string;
    };

export interface AnswerLimits {
  readonly inlineLimitBytes: number;
  /**
   * Largest an inline answer may be once written as a JSON string (see {@link jsonStringLength}),
   * for a transport that carries the body that way (a Lambda response); undefined: no such bound.
   */
  readonly inlineEncodedLimitBytes?: number;
  readonly presignSeconds: number;
  readonly store: LargeObjectStore | undefined;
  /** Key prefix for stored answers, e.g. the tenant. */
  readonly keyPrefix: string;
}

/** The most bytes one byte of UTF-8 text can take once escaped in a JSON string (`\u0001`). */
const MAX_ESCAPED_PER_BYTE = 6;
/**
 * Text is kept as written up to this size (no conversion for a page of records); past it, as UTF-8
 * bytes, because a JavaScript string of Czech text takes two bytes per character, twice its UTF-8.
 */
const TEXT_BYTES = 1024 * 1024;

/**
 * Collects an answer in memory up to the inline limit; past it, everything written so far and
 * everything after goes to the object store, so memory holds at most the limit plus one chunk.
 * An answer up to 1 MiB stays the text it was written as and is returned so, and its escaped size
 * is counted only once it could matter (an answer smaller than a sixth of the encoded limit fits
 * however it escapes), so a page of a few hundred KB is never converted or scanned byte by byte.
 */
export class AnswerWriter {
  private chunks: (string | Buffer)[] = [];
  private asBytes = false;
  private size = 0;
  /** Escaped size of the chunks before `uncounted`, and the bytes of the rest. */
  private encodedSize = 0;
  private uncounted = 0;
  private uncountedBytes = 0;
  private upload: LargeObjectUpload | undefined;
  private key: string | undefined;

  constructor(
    private readonly limits: AnswerLimits,
    private readonly contentType: string,
    private readonly extension: string,
  ) {}

  async write(chunk: string | Buffer): Promise<void> {
    if (this.upload) return this.upload.write(toBuffer(chunk));
    const piece = this.asBytes ? toBuffer(chunk) : chunk;
    const bytes = typeof piece === 'string' ? Buffer.byteLength(piece, 'utf8') : piece.length;
    this.chunks.push(piece);
    this.size += bytes;
    this.uncountedBytes += bytes;
    if (!this.asBytes && this.size > TEXT_BYTES) {
      this.chunks = this.chunks.map(toBuffer);
      this.asBytes = true;
    }
    if (this.size <= this.limits.inlineLimitBytes && this.fitsEncoded()) return;
    const store = this.limits.store;
    if (!store)
      throw new Error('The answer exceeds the inline limit and no large-answer bucket is configured');
    this.key = `${this.limits.keyPrefix}/${new Date().toISOString().slice(0, 10)}/${randomUUID()}.${this.extension}`;
    this.upload = store.startUpload(this.key, this.contentType);
    const buffered = this.chunks;
    this.chunks = [];
    for (const piece of buffered) await this.upload.write(toBuffer(piece));
  }

  /** Whether the text so far fits the encoded limit; counts escapes only when the bound does not tell. */
  private fitsEncoded(): boolean {
    const limit = this.limits.inlineEncodedLimitBytes;
    if (limit === undefined) return true;
    if (this.encodedSize + this.uncountedBytes * MAX_ESCAPED_PER_BYTE <= limit) return true;
    for (; this.uncounted < this.chunks.length; this.uncounted++) {
      const chunk = this.chunks[this.uncounted]!;
      this.encodedSize += typeof chunk === 'string' ? jsonTextLength(chunk) : jsonStringLength(chunk);
    }
    this.uncountedBytes = 0;
    return this.encodedSize <= limit;
  }

  async finish(): Promise<Answer> {
    if (!this.upload || !this.key) {
      const body = this.chunks.every((chunk) => typeof chunk === 'string')
        ? this.chunks.join('')
        : Buffer.concat(this.chunks.map(toBuffer), this.size);
      return { kind: 'inline', body, contentType: this.contentType };
    }
    await this.upload.complete();
    const location = await this.limits.store!.presignGet(this.key, this.limits.presignSeconds);
    return { kind: 'redirect', location, key: this.key };
  }

  /** Drops a partial upload after a failure. */
  async abort(): Promise<void> {
    await this.upload?.abort().catch(() => undefined);
  }
}

/**
 * An answer already whole in memory (a Web API envelope, encoded): inline when it fits the limits,
 * else stored behind a redirect, by the same rules as an answer written chunk by chunk.
 */
export async function completeAnswer(
  limits: AnswerLimits,
  body: string,
  contentType: string,
  extension: string,
): Promise<Answer> {
  const writer = new AnswerWriter(limits, contentType, extension);
  try {
    await writer.write(body);
    return await writer.finish();
  } catch (error) {
    await writer.abort();
    throw error;
  }
}

const toBuffer = (chunk: string | Buffer) => (typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);

/** {@link jsonStringLength} of text as a JavaScript string (well-formed: no lone surrogates). */
export function jsonTextLength(text: string): number {
  let extra = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit === 0x22 || unit === 0x5c) extra += 1;
    else if (unit < 0x20)
      extra += unit === 0x08 || unit === 0x09 || unit === 0x0a || unit === 0x0c || unit === 0x0d ? 1 : 5;
  }
  return Buffer.byteLength(text, 'utf8') + extra;
}

/**
 * Bytes of UTF-8 text once written as a JSON string (without its quotes), escaped as
 * `JSON.stringify` does: a quote, a backslash or a control character with a short escape (`\n`)
 * takes 2 bytes, any other control character 6 (`\u0001`).
 */
export function jsonStringLength(utf8: Uint8Array): number {
  let length = utf8.length;
  for (let i = 0; i < utf8.length; i++) {
    const byte = utf8[i]!;
    if (byte === 0x22 || byte === 0x5c) length += 1;
    else if (byte < 0x20)
      length += byte === 0x08 || byte === 0x09 || byte === 0x0a || byte === 0x0c || byte === 0x0d ? 1 : 5;
  }
  return length;
}
