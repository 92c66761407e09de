import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../shared/core/errors.js';
import { attachmentDisposition } from '../../shared/core/files/content-disposition.js';
import { entityTag, matchesIfNoneMatch } from '../../shared/core/files/entity-tag.js';
import { parseFileGuid } from '../../shared/core/files/file-guid.js';
import { COPY_CHUNK_BYTES, getFile } from '../../shared/core/files/get-file.js';
import { isMediaType } from '../../shared/core/files/media-type.js';
import { allowedProcedure } from '../../shared/core/files/procedures.js';
import { MAX_UPLOAD_BYTES, setFile, type UploadedFile } from '../../shared/core/files/set-file.js';
import { fileDownloadResponse, MAX_INLINE_FILE_BYTES } from '../../shared/lambda/get-file.js';
import { toLambdaResult } from '../../shared/lambda/http.js';
import { memoryDocumentStore, memoryObjectStore } from '../support/memory-stores.js';

const GUID = /^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$/;

async function failure(promise: Promise<unknown>): Promise<ServiceError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ServiceError);
  return error as ServiceError;
}

function thrown(fn: () => unknown): ServiceError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ServiceError);
    return error as ServiceError;
  }
  throw new Error('expected an error');
}

/** Decodes `filename*=UTF-8''…` as a client does. */
function extendedFileName(disposition: string): string | undefined {
  const match = /filename\*=UTF-8''([^;\s]*)/.exec(disposition);
  return match ? decodeURIComponent(match[1]!) : undefined;
}

describe('Function: parseFileGuid', () => {
  it('accepts a GUID in either case and answers it upper-case', () => {
    expect(parseFileGuid('0d4b5c5e-aaaa-4bbb-8ccc-123456789abc')).toBe(
      '0D4B5C5E-AAAA-4BBB-8CCC-123456789ABC',
    );
    expect(parseFileGuid('0D4B5C5E-AAAA-4BBB-8CCC-123456789ABC')).toBe(
      '0D4B5C5E-AAAA-4BBB-8CCC-123456789ABC',
    );
  });

  it.each([
    ['empty', ''],
    ['missing', undefined],
    ['too short', '0d4b5c5e-aaaa-4bbb-8ccc-123456789ab'],
    ['not hex', '0d4b5c5e-aaaa-4bbb-8ccc-123456789abg'],
    ['without dashes', '0d4b5c5eaaaa4bbb8ccc123456789abc'],
    ['with braces', '{0d4b5c5e-aaaa-4bbb-8ccc-123456789abc}'],
    ['SQL', "' OR 1=1 --"],
  ])('refuses %s with 400 invalid_file_guid', (_name, raw) => {
    const error = thrown(() => parseFileGuid(raw));
    expect(error.status).toBe(400);
    expect(error.code).toBe('invalid_file_guid');
  });
});

describe('Function: attachmentDisposition', () => {
  it('carries the exact UTF-8 name in filename* and an ASCII fallback', () => {
    const name = 'Faktura č. 2024-0001 – Žluťoučký kůň.xml';
    const header = attachmentDisposition(name);
    expect(header).toMatch(/^attachment; filename\*=UTF-8''/);
    expect(extendedFileName(header)).toBe(name);
    expect(header).toContain('filename="Faktura c. 2024-0001 _ Zlutoucky kun.xml"');
    expect(header).toMatch(/^[\x20-\x7e]+$/);
  });

  it('percent-encodes characters that are not attr-chars, including quotes and parentheses', () => {
    const name = `it's (a) "test"*;\\ 100%.txt`;
    const header = attachmentDisposition(name);
    const encoded = /filename\*=UTF-8''([^;\s]*)/.exec(header)![1]!;
    expect(encoded).toMatch(/^[A-Za-z0-9!#$&+\-.^_`|~%]+$/);
    expect(extendedFileName(header)).toBe(name);
    expect(header).toContain(`filename="it's (a) _test_*;_ 100%.txt"`);
  });

  it('never lets a line break or control character into the header', () => {
    const header = attachmentDisposition('evil\r\nSet-Cookie: x=1.txt');
    expect(header).not.toMatch(/[\r\n]/);
    expect(extendedFileName(header)).toBe('evilSet-Cookie: x=1.txt');
  });

  it.each([
    ['a right-to-left override', 'invoice\u202Efdp.exe', 'invoicefdp.exe'],
    ['an isolate and a mark', 'a\u2066b\u2069\u200F.txt', 'ab.txt'],
    ['a C1 control', 'a\u0085b\u009F.txt', 'ab.txt'],
  ])('never serves back %s a stored name holds (issue 19)', (_case, stored, served) => {
    const header = attachmentDisposition(stored);
    expect(extendedFileName(header)).toBe(served);
    expect(header).not.toMatch(/%E2%80%AE|%C2%85/i);
  });

  it('survives a lone surrogate (possible in nvarchar)', () => {
    expect(extendedFileName(attachmentDisposition('a\ud800b.txt'))).toBe('a\ufffdb.txt');
  });
});

describe('Function: entityTag', () => {
  it('is the quoted SHA-256', () => {
    expect(entityTag({ sha256: 'a'.repeat(64), fileGuid: 'X' })).toBe(`"${'a'.repeat(64)}"`);
  });

  it('falls back to the GUID when the stored hash is unusable', () => {
    expect(entityTag({ sha256: 'not a hash', fileGuid: 'ABC-D' })).toBe('"abc-d"');
  });
});

describe('Function: matchesIfNoneMatch', () => {
  const etag = `"${'b'.repeat(64)}"`;

  it.each([
    ['the same tag', etag],
    ['a weak form of it', `W/${etag}`],
    ['a list holding it', `"other", ${etag}, W/"third"`],
    ['*', '*'],
    ['* with spaces', ' * '],
  ])('matches %s', (_name, header) => {
    expect(matchesIfNoneMatch(header, etag)).toBe(true);
  });

  it.each([
    ['no header', undefined],
    ['another tag', '"other"'],
    ['the bare hash', 'b'.repeat(64)],
    ['an empty header', ''],
  ])('does not match %s', (_name, header) => {
    expect(matchesIfNoneMatch(header, etag)).toBe(false);
  });
});

describe('Function: allowedProcedure', () => {
  const allowed = ['DEMO_FILE_RECEIVED', 'audit.FILE_HOOK'];

  it('matches case-insensitively, an unqualified name meaning dbo', () => {
    expect(allowedProcedure('demo_file_received', allowed)).toEqual({
      schema: 'dbo',
      name: 'demo_file_received',
    });
    expect(allowedProcedure('DBO.Demo_File_Received', allowed)).toEqual({
      schema: 'DBO',
      name: 'Demo_File_Received',
    });
    expect(allowedProcedure('AUDIT.file_hook', allowed)).toEqual({ schema: 'AUDIT', name: 'file_hook' });
  });

  it.each([
    ['another procedure', 'DEMO_FILE_FAIL'],
    ['the right name in another schema', 'audit.DEMO_FILE_RECEIVED'],
    ['a schema-qualified entry without its schema', 'FILE_HOOK'],
  ])('refuses %s with 400 procedure_not_allowed', (_name, requested) => {
    const error = thrown(() => allowedProcedure(requested, allowed));
    expect(error.status).toBe(400);
    expect(error.code).toBe('procedure_not_allowed');
  });

  it.each([
    ['empty', ''],
    ['a statement', 'DEMO_FILE_RECEIVED; DROP TABLE SVCDOC'],
    ['brackets', '[DEMO_FILE_RECEIVED]'],
    ['three parts', 'db.dbo.DEMO_FILE_RECEIVED'],
  ])('refuses a name that is %s with 400 invalid_procedure_name', (_name, requested) => {
    const error = thrown(() => allowedProcedure(requested, allowed));
    expect(error.status).toBe(400);
    expect(error.code).toBe('invalid_procedure_name');
  });
});

describe('Function: isMediaType', () => {
  it.each(['application/xml', 'text/plain; charset=windows-1250', 'application/vnd.ms-excel', 'a/b;x="y z"'])(
    'accepts %s',
    (value) => expect(isMediaType(value)).toBe(true),
  );
  it.each(['xml', 'text/plain\r\nX: y', 'text/plaín', '', `application/${'x'.repeat(200)}`])(
    'refuses %j',
    (value) => expect(isMediaType(value)).toBe(false),
  );
});

describe('Function: setFile', () => {
  const upload = (
    content: Buffer,
    fields: { fileName?: string; contentType?: string } = { fileName: 'a.xml' },
  ): UploadedFile => ({
    fileName: fields.fileName,
    contentType: fields.contentType,
    content,
  });

  it('stores name, type, size and SHA-256 under a new upper-case GUID', async () => {
    const { store, files, calls } = memoryDocumentStore();
    const content = Buffer.from('<Invoice/>');
    const file = await setFile(
      { store, allowedProcedures: [] },
      upload(content, { fileName: 'invoice.xml', contentType: 'application/xml' }),
      undefined,
    );
    expect(file.fileGuid).toMatch(GUID);
    expect(file).toMatchObject({
      fileName: 'invoice.xml',
      contentType: 'application/xml',
      size: 10,
      sha256: createHash('sha256').update(content).digest('hex'),
    });
    expect(files.get(file.fileGuid)?.content.equals(content)).toBe(true);
    expect(calls).toEqual([]);
  });

  it('stores an empty file', async () => {
    const { store, files } = memoryDocumentStore();
    const file = await setFile({ store, allowedProcedures: [] }, upload(Buffer.alloc(0)), undefined);
    expect(file.size).toBe(0);
    expect(file.sha256).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(files.size).toBe(1);
  });

  it('calls an allowed procedure with the GUID after storing, as the catalogue spells it', async () => {
    const { store, files, calls } = memoryDocumentStore();
    const file = await setFile(
      { store, allowedProcedures: ['DEMO_FILE_RECEIVED'] },
      upload(Buffer.from('x')),
      'demo_file_received',
    );
    expect(files.has(file.fileGuid)).toBe(true);
    expect(calls).toEqual([
      { procedure: { schema: 'dbo', name: 'DEMO_FILE_RECEIVED' }, fileGuid: file.fileGuid },
    ]);
  });

  it('refuses a procedure the tenant does not allow before storing anything', async () => {
    const { store, files, calls } = memoryDocumentStore();
    const error = await failure(
      setFile(
        { store, allowedProcedures: ['DEMO_FILE_RECEIVED'] },
        upload(Buffer.from('x')),
        'DEMO_FILE_FAIL',
      ),
    );
    expect([error.status, error.code]).toEqual([400, 'procedure_not_allowed']);
    expect(files.size).toBe(0);
    expect(calls).toEqual([]);
  });

  it('keeps the file and answers 502 with its fileGUID when the procedure fails', async () => {
    const { store, files, failures } = memoryDocumentStore();
    failures.call = new Error('RAISE in the procedure: secret detail');
    const error = await failure(
      setFile(
        { store, allowedProcedures: ['DEMO_FILE_RECEIVED'] },
        upload(Buffer.from('x')),
        'DEMO_FILE_RECEIVED',
      ),
    );
    expect([error.status, error.code, error.expose]).toEqual([502, 'procedure_failed', true]);
    const fileGUID = error.details?.fileGUID as string;
    expect(fileGUID).toMatch(GUID);
    expect(files.has(fileGUID)).toBe(true);
    expect(error.message).not.toContain('secret detail');
  });

  it('answers 502 with the fileGUID when an allowed procedure is missing from the database', async () => {
    const { store, files } = memoryDocumentStore([]);
    const error = await failure(
      setFile(
        { store, allowedProcedures: ['DEMO_FILE_RECEIVED'] },
        upload(Buffer.from('x')),
        'DEMO_FILE_RECEIVED',
      ),
    );
    expect(error.status).toBe(502);
    expect(files.has(error.details?.fileGUID as string)).toBe(true);
  });

  it('answers 413 for a file over 4 MB and accepts exactly 4 MB', async () => {
    const { store, files } = memoryDocumentStore();
    const error = await failure(
      setFile({ store, allowedProcedures: [] }, upload(Buffer.alloc(MAX_UPLOAD_BYTES + 1)), undefined),
    );
    expect([error.status, error.code]).toEqual([413, 'file_too_large']);
    expect(files.size).toBe(0);
    await setFile({ store, allowedProcedures: [] }, upload(Buffer.alloc(MAX_UPLOAD_BYTES)), undefined);
    expect(files.size).toBe(1);
  });

  it.each([
    ['no file name', undefined],
    ['an empty file name', ''],
    ['a name over 260 characters', `${'a'.repeat(257)}.txt`],
    ['a control character', 'a\u0000b.txt'],
    ['DEL', 'a\u007Fb.txt'],
    ['a C1 control (NEL)', 'a\u0085b.txt'],
    ['a C1 control (APC)', 'a\u009Fb.txt'],
    ['a right-to-left override', 'invoice\u202Efdp.exe'],
    ['a left-to-right override', 'a\u202Db.txt'],
    ['an embedding', 'a\u202Ab.txt'],
    ['an isolate', 'a\u2067b\u2069.txt'],
    ['a right-to-left mark', 'a\u200Fb.txt'],
    ['an Arabic letter mark', 'a\u061Cb.txt'],
  ])('refuses %s with 400 invalid_file_name', async (_name, fileName) => {
    const { store, files } = memoryDocumentStore();
    const error = await failure(
      setFile({ store, allowedProcedures: [] }, upload(Buffer.from('x'), { fileName }), undefined),
    );
    expect([error.status, error.code]).toEqual([400, 'invalid_file_name']);
    expect(files.size).toBe(0);
  });

  it('refuses a content type that is not a media type with 400 invalid_content_type', async () => {
    const { store } = memoryDocumentStore();
    const error = await failure(
      setFile(
        { store, allowedProcedures: [] },
        upload(Buffer.from('x'), { fileName: 'a.txt', contentType: 'not a type' }),
        undefined,
      ),
    );
    expect([error.status, error.code]).toEqual([400, 'invalid_content_type']);
  });
});

describe('Function: getFile', () => {
  async function stored(content: Buffer, contentType: string | undefined) {
    const documents = memoryDocumentStore();
    const objects = memoryObjectStore();
    const file = await setFile(
      { store: documents.store, allowedProcedures: [] },
      { fileName: 'Účtenka 1.pdf', contentType, content },
      undefined,
    );
    const ctx = {
      store: documents.store,
      limits: {
        inlineLimitBytes: 1024,
        presignSeconds: 900,
        store: objects.store,
        keyPrefix: 'answers/demo',
      },
    };
    return { ...documents, objects: objects.objects, file, ctx };
  }

  it('answers a small file inline with its type, name and ETag', async () => {
    const { ctx, file } = await stored(Buffer.from('%PDF-1.7'), 'application/pdf');
    const download = await getFile(ctx, file.fileGuid.toLowerCase(), undefined);
    expect(download).toEqual({
      kind: 'inline',
      etag: `"${file.sha256}"`,
      contentType: 'application/pdf',
      contentDisposition: attachmentDisposition('Účtenka 1.pdf'),
      content: Buffer.from('%PDF-1.7'),
    });
  });

  it('serves application/octet-stream when no content type was stored', async () => {
    const { ctx, file } = await stored(Buffer.from('x'), undefined);
    const download = await getFile(ctx, file.fileGuid, undefined);
    expect(download.kind === 'inline' && download.contentType).toBe('application/octet-stream');
  });

  it('answers 304 on a matching If-None-Match without reading the content', async () => {
    const { ctx, file, reads } = await stored(Buffer.from('x'), 'application/pdf');
    expect(await getFile(ctx, file.fileGuid, `W/"${file.sha256}"`)).toEqual({
      kind: 'not-modified',
      etag: `"${file.sha256}"`,
    });
    expect(reads).toEqual({ whole: 0, slices: [] });
    expect((await getFile(ctx, file.fileGuid, '"stale"')).kind).toBe('inline');
  });

  it('copies a file over the inline limit to the object store in chunks and redirects', async () => {
    const content = Buffer.alloc(2 * COPY_CHUNK_BYTES + 5, 7);
    const { ctx, file, objects, reads } = await stored(content, 'application/pdf');
    const download = await getFile(ctx, file.fileGuid, undefined);
    expect(download.kind).toBe('redirect');
    const [key, object] = [...objects.entries()][0]!;
    expect(key).toMatch(/^answers\/demo\/files\/\d{4}-\d\d-\d\d\/[0-9a-f-]{36}$/);
    expect(download).toEqual({
      kind: 'redirect',
      etag: `"${file.sha256}"`,
      location: `https://bucket.example/${key}?X-Amz-Expires=900`,
    });
    expect(Buffer.concat(object.chunks).equals(content)).toBe(true);
    expect(object).toMatchObject({
      done: true,
      contentType: 'application/pdf',
      contentDisposition: attachmentDisposition('Účtenka 1.pdf'),
    });
    expect(reads.whole).toBe(0);
    expect(reads.slices.map((s) => s.offset)).toEqual([0, COPY_CHUNK_BYTES, 2 * COPY_CHUNK_BYTES]);
  });

  it('answers 404 file_not_found for an unknown GUID and 400 for a malformed one', async () => {
    const { ctx } = await stored(Buffer.from('x'), 'application/pdf');
    const unknown = await failure(getFile(ctx, '00000000-0000-0000-0000-000000000000', undefined));
    expect([unknown.status, unknown.code]).toEqual([404, 'file_not_found']);
    const malformed = await failure(getFile(ctx, 'nope', undefined));
    expect([malformed.status, malformed.code]).toEqual([400, 'invalid_file_guid']);
  });
});

describe('Function: fileDownloadResponse', () => {
  it('sends the file with type, disposition, length and ETag', () => {
    const response = fileDownloadResponse({
      kind: 'inline',
      etag: '"e"',
      contentType: 'text/plain',
      contentDisposition: 'attachment; filename*=UTF-8\'\'a.txt; filename="a.txt"',
      content: Buffer.from('abc'),
    });
    expect(response.status).toBe(200);
    expect(response.headers).toMatchObject({
      'content-type': 'text/plain',
      'content-disposition': 'attachment; filename*=UTF-8\'\'a.txt; filename="a.txt"',
      'content-length': '3',
      etag: '"e"',
    });
  });

  it('answers 304 with the ETag and no body, 303 with the location', () => {
    expect(fileDownloadResponse({ kind: 'not-modified', etag: '"e"' })).toMatchObject({
      status: 304,
      headers: { etag: '"e"' },
      body: '',
    });
    expect(fileDownloadResponse({ kind: 'redirect', etag: '"e"', location: 'https://s3/x' })).toMatchObject({
      status: 303,
      headers: { location: 'https://s3/x', 'cache-control': 'no-store' },
    });
  });
});

describe('Function: toLambdaResult', () => {
  it('keeps the bytes of a text/plain body that is not UTF-8 (base64)', () => {
    const bytes = Buffer.from([0x8a, 0x9a, 0xe8, 0x20, 0xff, 0x00, 0x41]); // windows-1250 "Šš č", 0xFF, NUL
    const result = toLambdaResult({ status: 200, headers: { 'content-type': 'text/plain' }, body: bytes });
    expect(result.isBase64Encoded).toBe(true);
    expect(Buffer.from(result.body!, 'base64').equals(bytes)).toBe(true);
  });

  it('still sends a UTF-8 text body as text', () => {
    const body = Buffer.from('<a>Žluťoučký</a>');
    const result = toLambdaResult({ status: 200, headers: { 'content-type': 'application/xml' }, body });
    expect(result).toMatchObject({ isBase64Encoded: false, body: '<a>Žluťoučký</a>' });
  });

  it.each([
    ['quotes', 'text/csv', '"a","b"\n'.repeat(1000)],
    ['control characters', 'text/plain', 'a\u0001'.repeat(1000)],
  ])('sends text full of %s as base64, which JSON escaping would make larger', (_what, type, text) => {
    // A stored file of this kind at the inline maximum (4.45 MiB) would not fit a Lambda response as text.
    const body = Buffer.from(text);
    const result = toLambdaResult({ status: 200, headers: { 'content-type': type }, body });
    expect(result.isBase64Encoded).toBe(true);
    expect(Buffer.from(result.body!, 'base64').equals(body)).toBe(true);
    expect(JSON.stringify(result.body).length).toBeLessThan(JSON.stringify(text).length);
  });

  it('keeps an inline file at the maximum within the Lambda response limit, whatever its text', () => {
    const text = Buffer.alloc(MAX_INLINE_FILE_BYTES, '"');
    const result = toLambdaResult(
      fileDownloadResponse({
        kind: 'inline',
        etag: '"x"',
        contentType: 'application/json',
        contentDisposition: 'attachment',
        content: text,
      }),
    );
    expect(Buffer.byteLength(JSON.stringify(result))).toBeLessThanOrEqual(6 * 1024 * 1024);
  });
});
