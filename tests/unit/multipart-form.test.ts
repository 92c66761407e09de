import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../shared/core/errors.js';
import { MAX_UPLOAD_BYTES } from '../../shared/core/files/set-file.js';
import type { HttpRequest } from '../../shared/lambda/http.js';
import { formBoundary, readFilePart } from '../../shared/lambda/multipart-form.js';

function request(body: Buffer, contentType: string | undefined): HttpRequest {
  return {
    method: 'POST',
    path: '/demo/JsonAPI/File/setFile',
    params: { tenant: 'demo' },
    query: new URLSearchParams(),
    headers: contentType === undefined ? {} : { 'content-type': contentType },
    body,
    requestId: 'test',
  };
}

/** A form encoded exactly as fetch sends it. */
async function formRequest(fill: (form: FormData) => void): Promise<HttpRequest> {
  const form = new FormData();
  fill(form);
  const encoded = new Request('http://localhost/', { method: 'POST', body: form });
  return request(Buffer.from(await encoded.arrayBuffer()), encoded.headers.get('content-type')!);
}

/** A hand-written multipart body (CRLF line ends) for shapes fetch never sends. */
function rawRequest(lines: (string | Buffer)[], boundary = 'XyZ'): HttpRequest {
  const pieces = lines.map((line) => (typeof line === 'string' ? Buffer.from(`${line}\r\n`) : line));
  return request(Buffer.concat(pieces), `multipart/form-data; boundary=${boundary}`);
}

async function refusal(promise: Promise<unknown>): Promise<[number, string]> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ServiceError);
  return [(error as ServiceError).status, (error as ServiceError).code];
}

describe('Function: readFilePart', () => {
  it('returns the part "file" byte for byte, with its name and type', async () => {
    const content = Buffer.concat([Buffer.from([...Array(256).keys()]), Buffer.from('\r\n--XyZ\r\n')]);
    const upload = await readFilePart(
      await formRequest((form) => {
        form.append('note', 'hello');
        form.append('file', new Blob([content], { type: 'application/octet-stream' }), 'Žluťoučký kůň.bin');
      }),
    );
    expect(upload.fileName).toBe('Žluťoučký kůň.bin');
    expect(upload.contentType).toBe('application/octet-stream');
    expect(upload.content.equals(content)).toBe(true);
  });

  it('keeps several megabytes of random bytes intact', async () => {
    const content = randomBytes(3.5 * 1024 * 1024);
    const upload = await readFilePart(
      await formRequest((form) => form.append('file', new Blob([content]), 'random.bin')),
    );
    expect(upload.content.equals(content)).toBe(true);
  });

  it('accepts an empty file as an empty file', async () => {
    const upload = await readFilePart(
      await formRequest((form) => form.append('file', new Blob([], { type: 'text/plain' }), 'empty.txt')),
    );
    expect(upload).toEqual({ fileName: 'empty.txt', contentType: 'text/plain', content: Buffer.alloc(0) });
  });

  it('keeps the part Content-Type with its parameters', async () => {
    const upload = await readFilePart(
      rawRequest([
        '--XyZ',
        'Content-Disposition: form-data; name="file"; filename="a.txt"',
        'Content-Type: text/plain; charset=windows-1250',
        '',
        Buffer.from([0x8a, 0x9a]),
        '',
        '--XyZ--',
      ]),
    );
    expect(upload.contentType).toBe('text/plain; charset=windows-1250');
    expect(upload.content.equals(Buffer.from([0x8a, 0x9a]))).toBe(true);
  });

  it.each([
    ['a Windows path (backslashes escaped, RFC 7578)', 'C:\\\\Users\\\\eva\\\\faktura.xml'],
    ['a POSIX path', '/home/eva/faktura.xml'],
  ])('keeps only the last path segment of %s', async (_name, sent) => {
    const upload = await readFilePart(
      rawRequest([
        '--XyZ',
        `Content-Disposition: form-data; name="file"; filename="${sent}"`,
        '',
        'x',
        '--XyZ--',
      ]),
    );
    expect(upload.fileName).toBe('faktura.xml');
  });

  it('keeps a file whose bytes hold pieces of the boundary, at any split', async () => {
    for (const cut of [1, 2, 3, 5, 6]) {
      const content = Buffer.concat([
        Buffer.from('a\r\n--XyZ'.slice(0, cut)),
        Buffer.from([0, 0x2d, 0x2d, 0x0d]),
      ]);
      const upload = await readFilePart(
        rawRequest([
          '--XyZ',
          'Content-Disposition: form-data; name="file"; filename="a.bin"',
          '',
          Buffer.concat([content, Buffer.from('\r\n')]),
          '--XyZ--',
        ]),
      );
      expect(upload.content.equals(content)).toBe(true);
    }
  });

  it('reads a field named "files" beside the file as a field', async () => {
    const upload = await readFilePart(
      await formRequest((form) => {
        form.append('file', new Blob(['x']), 'a.txt');
        form.append('files', 'a note');
      }),
    );
    expect([upload.fileName, upload.content.toString()]).toEqual(['a.txt', 'x']);
  });

  it('passes over a part whose disposition is not form-data', async () => {
    const upload = await readFilePart(
      rawRequest([
        '--XyZ',
        'Content-Disposition: attachment; name="file"; filename="other.txt"',
        '',
        'ignored',
        '--XyZ',
        'Content-Disposition: form-data; name="file"; filename="a.txt"',
        '',
        'kept',
        '--XyZ--',
      ]),
    );
    expect([upload.fileName, upload.content.toString()]).toEqual(['a.txt', 'kept']);
  });

  it('decodes an RFC 8187 filename*', async () => {
    const upload = await readFilePart(
      rawRequest([
        '--XyZ',
        'Content-Disposition: form-data; name="file"; filename*=UTF-8\'\'%C5%BDlu%C5%A5.txt',
        '',
        'x',
        '--XyZ--',
      ]),
    );
    expect(upload.fileName).toBe('Žluť.txt');
  });

  it.each([
    ['no Content-Type', undefined],
    ['JSON', 'application/json'],
    ['a urlencoded form', 'application/x-www-form-urlencoded'],
    ['multipart/mixed', 'multipart/mixed; boundary=XyZ'],
  ])('refuses %s with 415 unsupported_media_type', async (_name, contentType) => {
    expect(await refusal(readFilePart(request(Buffer.from('{}'), contentType)))).toEqual([
      415,
      'unsupported_media_type',
    ]);
  });

  it('refuses a form without a file part with 400 missing_file_part', async () => {
    expect(await refusal(readFilePart(await formRequest((form) => form.append('note', 'x'))))).toEqual([
      400,
      'missing_file_part',
    ]);
  });

  it('refuses a field "file" that is not a file (no file name) with 400 missing_file_part', async () => {
    expect(
      await refusal(readFilePart(await formRequest((form) => form.append('file', 'just text')))),
    ).toEqual([400, 'missing_file_part']);
  });

  it('says so when the part "file" is a plain field, not a file', async () => {
    const error = await readFilePart(await formRequest((form) => form.append('file', 'just text'))).catch(
      (e: ServiceError) => e,
    );
    expect((error as ServiceError).message).toMatch(/"file" is a form field, not a file/);
  });

  it.each([
    ['before', ['field', 'file']],
    ['after', ['file', 'field']],
  ])('refuses a field named "file" %s the file part with 400 too_many_file_parts', async (_when, order) => {
    const request = await formRequest((form) => {
      for (const kind of order) {
        if (kind === 'file') form.append('file', new Blob(['x']), 'a.txt');
        else form.append('file', 'just text');
      }
    });
    const error = await readFilePart(request).catch((e: ServiceError) => e);
    expect([(error as ServiceError).status, (error as ServiceError).code]).toEqual([
      400,
      'too_many_file_parts',
    ]);
    expect((error as ServiceError).message).toMatch(/2 parts named "file"/);
  });

  it('refuses a single file part under another name with 400 missing_file_part', async () => {
    const error = await readFilePart(
      await formRequest((form) => form.append('upload', new Blob(['x']), 'a.txt')),
    ).catch((e: ServiceError) => e);
    expect((error as ServiceError).code).toBe('missing_file_part');
    expect((error as ServiceError).message).toContain('"upload"');
  });

  it.each([
    ['two parts named file', ['file', 'file']],
    ['a second file part under another name', ['file', 'other']],
  ])('refuses %s with 400 too_many_file_parts', async (_name, names) => {
    const request = await formRequest((form) => {
      for (const name of names) form.append(name, new Blob(['x']), `${name}.txt`);
    });
    expect(await refusal(readFilePart(request))).toEqual([400, 'too_many_file_parts']);
  });

  it('counts an empty second file part too', async () => {
    const request = await formRequest((form) => {
      form.append('file', new Blob(['x']), 'a.txt');
      form.append('file', new Blob([]), 'b.txt');
    });
    expect(await refusal(readFilePart(request))).toEqual([400, 'too_many_file_parts']);
  });

  it('refuses a file over 4 MB with 413 file_too_large, and takes exactly 4 MB', async () => {
    const over = await formRequest((form) =>
      form.append('file', new Blob([Buffer.alloc(MAX_UPLOAD_BYTES + 1)]), 'a'),
    );
    expect(await refusal(readFilePart(over))).toEqual([413, 'file_too_large']);
    const exact = await formRequest((form) =>
      form.append('file', new Blob([Buffer.alloc(MAX_UPLOAD_BYTES)]), 'a'),
    );
    expect((await readFilePart(exact)).content.length).toBe(MAX_UPLOAD_BYTES);
  });

  it('refuses a body far over the limit before parsing it', async () => {
    const huge = rawRequest(['--XyZ', Buffer.alloc(MAX_UPLOAD_BYTES + 128 * 1024)]);
    expect(await refusal(readFilePart(huge))).toEqual([413, 'file_too_large']);
  });

  it.each([
    ['without a boundary parameter', request(Buffer.from('x'), 'multipart/form-data')],
    [
      'truncated before the closing boundary',
      rawRequest(['--XyZ', 'Content-Disposition: form-data; name="file"; filename="a"', '', 'x']),
    ],
    ['with another boundary than announced', rawRequest(['--Other', '--Other--'])],
    ['that is empty', request(Buffer.alloc(0), 'multipart/form-data; boundary=XyZ')],
    [
      'with a part header that is not UTF-8',
      rawRequest([
        '--XyZ',
        Buffer.from('Content-Disposition: form-data; name="file"; filename="\xff"\r\n', 'latin1'),
        '',
        'x',
        '--XyZ--',
      ]),
    ],
    [
      'with a part header over 8 KB',
      rawRequest([
        '--XyZ',
        `Content-Disposition: form-data; name="file"; filename="${'a'.repeat(9000)}"`,
        '',
        'x',
        '--XyZ--',
      ]),
    ],
  ])('refuses a body %s with 400 invalid_multipart', async (_name, bad) => {
    expect(await refusal(readFilePart(bad))).toEqual([400, 'invalid_multipart']);
  });
});

describe('Function: formBoundary', () => {
  it('reads a plain or quoted boundary, case-insensitively', () => {
    expect(formBoundary('multipart/form-data; boundary=abc')).toBe('abc');
    expect(formBoundary('Multipart/Form-Data; charset=utf-8; BOUNDARY="a b:c"')).toBe('a b:c');
  });
});
