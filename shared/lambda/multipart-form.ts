import type { APIGatewayProxyEvent } from 'aws-lambda';
import multipart from 'lambda-multipart-parser';
import { badRequest, ServiceError } from '../core/errors.js';
import { fileTooLarge, MAX_UPLOAD_BYTES, type UploadedFile } from '../core/files/set-file.js';
import type { HttpRequest } from './http.js';

/** Room for part headers and small fields around the file, checked before anything is parsed. */
const FORM_OVERHEAD_BYTES = 64 * 1024;
const CRLF = Buffer.from('\r\n');
const HEADER_END = Buffer.from('\r\n\r\n');

/** One part of a multipart/form-data body, as its headers describe it. */
export interface FormPart {
  readonly name: string | undefined;
  /** The file name (its last path segment, as busboy keeps it); undefined for a plain field. */
  readonly fileName: string | undefined;
  /** The part's `Content-Type` header as sent. */
  readonly contentType: string | undefined;
  /** A file part in busboy's sense: it has a file name or is `application/octet-stream`. */
  readonly isFile: boolean;
  readonly size: number;
}

const malformed = () =>
  badRequest('invalid_multipart', 'The multipart/form-data body is malformed or truncated');

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

/**
 * Parameters of a `Content-Disposition` value, names lower-case; `name*` (RFC 8187) is decoded into
 * `name`. Inside quotes only `\"` and `\\` are escapes, as in busboy, so Windows paths survive.
 */
function dispositionParams(value: string): { type: string; params: Map<string, string> } {
  const params = new Map<string, string>();
  const type = value.split(';', 1)[0]!.trim().toLowerCase();
  const pattern = /;\s*([^\s=;]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g;
  const extended = new Map<string, string>();
  for (const match of value.matchAll(pattern)) {
    const key = match[1]!.toLowerCase();
    const raw = match[2] !== undefined ? match[2].replace(/\\(["\\])/g, '$1') : match[3]!.trim();
    if (key.endsWith('*')) {
      const decoded = decodeExtendedValue(raw);
      if (decoded !== undefined) extended.set(key.slice(0, -1), decoded);
    } else {
      params.set(key, raw);
    }
  }
  for (const [key, decoded] of extended) params.set(key, decoded);
  return { type, params };
}

/** `charset'lang'percent-encoded` → text (UTF-8 or ISO-8859-1). */
function decodeExtendedValue(value: string): string | undefined {
  const match = /^([^']*)'[^']*'(.*)$/.exec(value);
  if (!match) return undefined;
  const charset = match[1]!.toLowerCase();
  if (charset !== 'utf-8' && charset !== 'iso-8859-1') return undefined;
  const bytes = Buffer.from(
    match[2]!.replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))),
    'latin1',
  );
  return bytes.toString(charset === 'utf-8' ? 'utf8' : 'latin1');
}

/** Like busboy: the last path segment, and nothing for `.` or `..`. */
function baseName(path: string): string {
  const last = path.slice(Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\')) + 1);
  return last === '.' || last === '..' ? '' : last;
}

function describePart(headerText: string, size: number): FormPart | undefined {
  const headers = new Map<string, string>();
  for (const line of headerText.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  const disposition = headers.get('content-disposition');
  if (disposition === undefined) return undefined;
  const { type, params } = dispositionParams(disposition);
  if (type !== 'form-data') return undefined; // busboy skips such parts too
  const rawFileName = params.get('filename');
  const fileName = rawFileName === undefined ? undefined : baseName(rawFileName);
  const contentType = headers.get('content-type');
  const mediaType = contentType?.split(';', 1)[0]?.trim().toLowerCase();
  return {
    name: params.get('name'),
    fileName,
    contentType,
    isFile: fileName !== undefined || mediaType === 'application/octet-stream',
    size,
  };
}

/**
 * The parts of a multipart/form-data body, from their headers; undefined when the body is not
 * well-formed (no boundary line, an unterminated part, no closing boundary).
 */
export function formParts(body: Buffer, boundary: string): FormPart[] | undefined {
  const dashBoundary = Buffer.from(`--${boundary}`);
  const delimiter = Buffer.concat([CRLF, dashBoundary]);
  let position: number;
  if (body.subarray(0, dashBoundary.length).equals(dashBoundary)) {
    position = dashBoundary.length;
  } else {
    const first = body.indexOf(delimiter);
    if (first < 0) return undefined;
    position = first + delimiter.length;
  }
  const parts: FormPart[] = [];
  while (true) {
    if (body[position] === 0x2d && body[position + 1] === 0x2d) return parts; // "--": the closing delimiter
    while (body[position] === 0x20 || body[position] === 0x09) position += 1;
    if (!body.subarray(position, position + 2).equals(CRLF)) return undefined;
    position += 2;
    let contentStart: number;
    let headerText = '';
    if (body.subarray(position, position + 2).equals(CRLF)) {
      contentStart = position + 2;
    } else {
      const headerEnd = body.indexOf(HEADER_END, position);
      if (headerEnd < 0) return undefined;
      headerText = body.toString('utf8', position, headerEnd);
      contentStart = headerEnd + HEADER_END.length;
    }
    const next = body.indexOf(delimiter, contentStart);
    if (next < 0) return undefined;
    const part = describePart(headerText, next - contentStart);
    if (part) parts.push(part);
    position = next + delimiter.length;
  }
}

/**
 * The one file part named `file` of a `setFile` request. The content comes from
 * lambda-multipart-parser; the part list comes from the part headers, because the parser drops
 * empty files (an empty upload is valid) and lets a field named `files` replace its file list.
 */
export async function readFilePart(request: HttpRequest): Promise<UploadedFile> {
  const contentType = request.headers['content-type'];
  const boundary = formBoundary(contentType);
  if (request.body.length > MAX_UPLOAD_BYTES + FORM_OVERHEAD_BYTES) throw fileTooLarge();
  const parts = formParts(request.body, boundary);
  if (!parts) throw malformed();

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
  if (part.size > MAX_UPLOAD_BYTES) throw fileTooLarge();
  if (parts.some((other) => !other.isFile && other.name === 'files')) {
    throw badRequest('invalid_multipart', 'A form field may not be named "files"');
  }

  const event = {
    headers: { 'content-type': contentType },
    body: request.body.toString('base64'),
    isBase64Encoded: true,
  } as unknown as APIGatewayProxyEvent;
  const parsed = await multipart.parse(event).catch(() => {
    throw malformed();
  });
  const file = parsed.files[0];
  const content = file?.content ?? Buffer.alloc(0);
  // Both readings of the body must agree, or the stored bytes could differ from those sent.
  if (parsed.files.length > 1 || content.length !== part.size) throw malformed();
  return { fileName: part.fileName, contentType: part.contentType, content };
}
