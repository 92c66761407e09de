import { randomUUID } from 'node:crypto';

/** Port: object storage for answers too large to return inline. */
export interface LargeObjectStore {
  /** Starts a streamed upload of one object. */
  startUpload(key: string, contentType: string, contentDisposition?: string): LargeObjectUpload;
  /** A time-limited GET URL for an uploaded object. */
  presignGet(key: string, expiresSeconds: number): Promise<string>;
}

export interface LargeObjectUpload {
  /** Resolves when the chunk is accepted (honours backpressure). */
  write(chunk: Buffer): Promise<void>;
  complete(): Promise<void>;
  abort(): Promise<void>;
}

/** What a read answers: a body to return as it is, or a redirect to where it was stored. */
export type Answer =
  | { readonly kind: 'inline'; readonly body: Buffer; readonly contentType: string }
  | { readonly kind: 'redirect'; readonly location: string };

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

/**
 * Collects an answer in memory up to the inline limit; past it, everything written so far and
 * everything after goes to the object store, so memory holds at most the limit plus one chunk.
 */
export class AnswerWriter {
  private chunks: Buffer[] = [];
  private size = 0;
  private encodedSize = 0;
  private upload: LargeObjectUpload | undefined;
  private key: string | undefined;

  constructor(
    private readonly limits: AnswerLimits,
    private readonly contentType: string,
    private readonly extension: string,
  ) {}

  async write(chunk: string | Buffer): Promise<void> {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    if (this.upload) return this.upload.write(bytes);
    this.chunks.push(bytes);
    this.size += bytes.length;
    this.encodedSize += jsonStringLength(bytes);
    const encodedLimit = this.limits.inlineEncodedLimitBytes ?? Number.POSITIVE_INFINITY;
    if (this.size <= this.limits.inlineLimitBytes && this.encodedSize <= encodedLimit) return;
    const store = this.limits.store;
    if (!store)
      throw new Error('The answer exceeds the inline limit and no large-answer bucket is configured');
    this.key = `${this.limits.keyPrefix}/${new Date().toISOString().slice(0, 10)}/${randomUUID()}.${this.extension}`;
    this.upload = store.startUpload(this.key, this.contentType);
    const buffered = this.chunks;
    this.chunks = [];
    for (const piece of buffered) await this.upload.write(piece);
  }

  async finish(): Promise<Answer> {
    if (!this.upload || !this.key) {
      return { kind: 'inline', body: Buffer.concat(this.chunks, this.size), contentType: this.contentType };
    }
    await this.upload.complete();
    const location = await this.limits.store!.presignGet(this.key, this.limits.presignSeconds);
    return { kind: 'redirect', location };
  }

  /** Drops a partial upload after a failure. */
  async abort(): Promise<void> {
    await this.upload?.abort().catch(() => undefined);
  }
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
