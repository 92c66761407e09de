import { type FileDownload, getFile } from '../core/files/get-file.js';
import { answerLimits, type DataApiRoute } from './data-api.js';
import { tenantDocumentStore } from './document-store.js';
import { MAX_RESPONSE_BODY_BYTES } from './http.js';
import type { HttpResponse } from './request-context.js';

/**
 * A Lambda answers at most 6 MB and binary goes base64 (4/3 larger), so files above this go
 * through S3 even when the inline limit is higher.
 */
export const MAX_INLINE_FILE_BYTES = Math.floor((MAX_RESPONSE_BODY_BYTES * 3) / 4);

/** Encodes a {@link FileDownload}. */
export function fileDownloadResponse(download: FileDownload): HttpResponse {
  // The content under a GUID never changes, but access is per user: revalidate with the ETag.
  const headers = { etag: download.etag, 'cache-control': 'private, no-cache' };
  switch (download.kind) {
    case 'not-modified':
      return { status: 304, headers, body: '' };
    case 'redirect':
      return {
        status: 303,
        // The presigned URL expires: never reuse this answer.
        headers: { ...headers, 'cache-control': 'no-store', location: download.location },
        body: '',
      };
    case 'inline':
      return {
        status: 200,
        headers: {
          ...headers,
          'content-type': download.contentType,
          'content-disposition': download.contentDisposition,
          'content-length': String(download.content.length),
          'x-content-type-options': 'nosniff',
        },
        body: download.content,
      };
  }
}

/** `GET /{tenant}/JsonAPI/File/getFile/{fileGUID}` (scope `files.read`) */
export const getFileRoute: DataApiRoute = async ({ tenant, request, trace }) => {
  const limits = await answerLimits(tenant);
  const download = await getFile(
    {
      store: await tenantDocumentStore(tenant, trace),
      limits: { ...limits, inlineLimitBytes: Math.min(limits.inlineLimitBytes, MAX_INLINE_FILE_BYTES) },
    },
    request.params.fileGUID,
    request.headers['if-none-match'],
  );
  return fileDownloadResponse(download);
};
