import {
  MaxFileSizeExceededError,
  MaxTotalSizeExceededError,
  MultipartParseError,
  type MultipartPart,
  parseMultipart,
} from '@remix-run/multipart-parser';
import { badRequest, ServiceError } from '../core/errors.js';
import { fileTooLarge, MAX_UPLOAD_BYTES, type UploadedFile } from '../core/files/set-file.js';
import type { HttpRequest } from './http.js';

/**
 * `multipart/form-data` for `setFile`, read by one parser (@remix-run/multipart-parser; docs/api.md
 * says why not busboy): it keeps each part's own headers, so the file's `Content-Type` is stored
 * with its parameters (`text/plain; charset=windows-1250`), and it reads empty and split files as
 * sent. Its size limit refuses a file over 4 MB while reading.
 */

/** Room for part headers and small fields around the file, checked before anything is parsed. */
const FORM_OVERHEAD_BYTES = 64 * 1024;
/** A form for one file needs few parts; more is not a setFile request. */
const MAX_PARTS = 100;

const malformed = (detail: string) =>
  badRequest('invalid_multipart', `The multipart/form-data body is malformed or truncated: ${detail}`);

/** The `boundary` parameter of a multipart/form-data `Content-Type`; 415 for any other type. */
export function formBoundary(contentType: string | undefined): string {
  const [mediaType = '', ...params] = (contentType ?? '').split(';');
  if (mediaType.trim().toLowerCase() !== 'multipart/form-data') {
    throw new ServiceError(
      415,
      'unsupported_media_type',
      `setFile takes multipart/form-data, not "${mediaType.trim().slice(0, 100) || 'no Content-Type'}"`,
    );
  }
  for (const param of params) {
    const match = /^\s*boundary\s*=\s*(?:"([^"]{1,70})"|([^\s";]{1,70}))\s*$/i.exec(param);
    if (match) return (match[1] ?? match[2])!;
  }
  throw badRequest('invalid_multipart', 'The multipart/form-data Content-Type has no boundary');
}

/** The last path segment of a file name (a browser may send a whole path), nothing for `.` or `..`. */
function baseName(path: string): string {
  const last = path.slice(Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\')) + 1);
  return last === '.' || last === '..' ? '' : last;
}

/** The form-data parts of a body (parts of another disposition are not form fields); 400 or 413 while reading. */
function formDataParts(body: Buffer, boundary: string): MultipartPart[] {
  if (body.length === 0) throw malformed('the body is empty');
  const parts: MultipartPart[] = [];
  try {
    for (const part of parseMultipart(body, {
      boundary,
      maxFileSize: MAX_UPLOAD_BYTES,
      maxTotalSize: MAX_UPLOAD_BYTES + FORM_OVERHEAD_BYTES,
      maxParts: MAX_PARTS,
    })) {
      const disposition = part.headers['content-disposition'] ?? '';
      if (/^\s*form-data\s*(;|$)/i.test(disposition)) parts.push(part);
    }
  } catch (error) {
    if (error instanceof MaxFileSizeExceededError || error instanceof MaxTotalSizeExceededError) {
      throw fileTooLarge();
    }
    if (error instanceof MultipartParseError) throw malformed(error.message.slice(0, 200));
    // Part headers that are not UTF-8.
    if (error instanceof TypeError) throw malformed('a part header is not UTF-8');
    throw error;
  }
  return parts;
}

/** The one file part named `file` of a `setFile` request: 415, 400 or 413 naming the problem. */
export async function readFilePart(request: HttpRequest): Promise<UploadedFile> {
  const boundary = formBoundary(request.headers['content-type']);
  if (request.body.length > MAX_UPLOAD_BYTES + FORM_OVERHEAD_BYTES) throw fileTooLarge();
  const parts = formDataParts(request.body, boundary);

  const fileParts = parts.filter((part) => part.isFile);
  if (fileParts.length > 1) {
    throw badRequest(
      'too_many_file_parts',
      `The form has ${fileParts.length} file parts; send exactly one, named "file"`,
    );
  }
  const named = parts.filter((other) => other.name === 'file');
  if (named.length > 1) {
    // A field and a file both named "file": which one the caller meant cannot be told.
    throw badRequest(
      'too_many_file_parts',
      `The form has ${named.length} parts named "file"; send exactly one, the file`,
    );
  }
  const part = fileParts[0];
  if (part?.name !== 'file') {
    throw badRequest(
      'missing_file_part',
      part
        ? `The file part is named "${(part.name ?? '').slice(0, 64)}"; it must be named "file"`
        : named.length > 0
          ? 'The part "file" is a form field, not a file: send it with a file name (e.g. curl -F file=@invoice.xml)'
          : 'The form has no file part named "file" (e.g. curl -F file=@invoice.xml)',
    );
  }
  const bytes = part.bytes;
  return {
    fileName: part.filename === undefined ? undefined : baseName(part.filename),
    contentType: part.headers['content-type'],
    content: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
  };
}
