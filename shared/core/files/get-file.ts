import { randomUUID } from 'node:crypto';
import type { AnswerLimits } from '../answers.js';
import { notFound } from '../errors.js';
import { attachmentDisposition } from './content-disposition.js';
import type { DocumentStore } from './document-store.js';
import { entityTag, matchesIfNoneMatch } from './entity-tag.js';
import { parseFileGuid } from './file-guid.js';
import { DEFAULT_CONTENT_TYPE, isMediaType } from './media-type.js';

/** Bytes read from the database per query when a large file is copied to the object store. */
export const COPY_CHUNK_BYTES = 1024 * 1024;

export interface GetFileContext {
  readonly store: DocumentStore;
  /** `inlineLimitBytes`: files up to this size are answered inline, larger ones through the object store. */
  readonly limits: AnswerLimits;
}

/** What `getFile` answers. */
export type FileDownload =
  | { readonly kind: 'not-modified'; readonly etag: string }
  | {
      readonly kind: 'inline';
      readonly etag: string;
      readonly contentType: string;
      readonly contentDisposition: string;
      readonly content: Buffer;
    }
  | { readonly kind: 'redirect'; readonly etag: string; readonly location: string };

/**
 * `getFile`: metadata first, so that a 304 or a redirect decision never loads the content; a file
 * over the inline limit is copied to the object store a chunk at a time and answered with a
 * presigned URL that keeps its name and type.
 */
export async function getFile(
  ctx: GetFileContext,
  rawGuid: string | undefined,
  ifNoneMatch: string | undefined,
): Promise<FileDownload> {
  const fileGuid = parseFileGuid(rawGuid);
  const missing = () => notFound('file_not_found', `There is no file ${fileGuid}`);
  const file = await ctx.store.find(fileGuid);
  if (!file) throw missing();
  const etag = entityTag(file);
  if (matchesIfNoneMatch(ifNoneMatch, etag)) return { kind: 'not-modified', etag };

  const contentType =
    file.contentType && isMediaType(file.contentType) ? file.contentType : DEFAULT_CONTENT_TYPE;
  const contentDisposition = attachmentDisposition(file.fileName);
  if (file.size <= ctx.limits.inlineLimitBytes) {
    const content = await ctx.store.readContent(fileGuid);
    if (!content) throw missing();
    return { kind: 'inline', etag, contentType, contentDisposition, content };
  }

  const objects = ctx.limits.store;
  if (!objects) throw new Error('The file exceeds the inline limit and no large-answer bucket is configured');
  const key = `${ctx.limits.keyPrefix}/files/${new Date().toISOString().slice(0, 10)}/${randomUUID()}`;
  const upload = objects.startUpload(key, contentType, contentDisposition);
  try {
    for (let offset = 0; offset < file.size; offset += COPY_CHUNK_BYTES) {
      const chunk = await ctx.store.readContentSlice(fileGuid, offset, COPY_CHUNK_BYTES);
      if (chunk.length === 0) break;
      await upload.write(chunk);
    }
    await upload.complete();
  } catch (error) {
    await upload.abort().catch(() => undefined);
    throw error;
  }
  return { kind: 'redirect', etag, location: await objects.presignGet(key, ctx.limits.presignSeconds) };
}
