import { describe, expect, it } from 'vitest';
import { DatabasePermissionError, DatabaseStatementError } from '../../shared/core/database.js';
import { ServiceError } from '../../shared/core/errors.js';
import { DocumentTransactionLostError } from '../../shared/core/files/document-store.js';
import {
  checkUpload,
  type FileOutcome,
  setFileUnderKey,
  type UploadedFile,
  uploadFingerprint,
} from '../../shared/core/files/set-file.js';
import { type CallKey, keyDigest } from '../../shared/core/idempotency.js';
import { creationFingerprint } from '../../shared/core/notifications/subscriptions.js';
import { readFilePart } from '../../shared/lambda/multipart-form.js';
import type { HttpRequest } from '../../shared/lambda/request-context.js';
import { memoryIdempotencyStore } from '../support/memory-idempotency-store.js';
import { memoryDocumentStore } from '../support/memory-stores.js';

/** A multipart request of one file part, with the boundary given. */
function multipart(boundary: string, file: { name: string; type: string; content: string }): HttpRequest {
  const body = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.name}"\r\n` +
      `Content-Type: ${file.type}\r\n\r\n${file.content}\r\n--${boundary}--\r\n`,
  );
  return {
    method: 'POST',
    path: '/demo/JsonAPI/File/setFile',
    params: {},
    query: new URLSearchParams(),
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    body,
    requestId: 'r',
  };
}

describe('Function: uploadFingerprint', () => {
  const file = { name: 'invoice.xml', type: 'application/xml', content: '<invoice/>' };

  it('is the same for the same file sent with another multipart boundary', async () => {
    // Prepare
    const one = await readFilePart(multipart('----boundaryOne', file));
    const two = await readFilePart(multipart('xYz-another-0123', file));
    // Act, Assess
    expect(uploadFingerprint(one, 'DEMO_FILE_RECEIVED')).toBe(uploadFingerprint(two, 'DEMO_FILE_RECEIVED'));
  });

  it('differs with the bytes, the file name, the type or userDBProcedure', async () => {
    const base: UploadedFile = { fileName: 'a.txt', contentType: 'text/plain', content: Buffer.from('a') };
    const fingerprints = [
      uploadFingerprint(base, undefined),
      uploadFingerprint({ ...base, content: Buffer.from('b') }, undefined),
      uploadFingerprint({ ...base, fileName: 'b.txt' }, undefined),
      uploadFingerprint({ ...base, contentType: 'text/csv' }, undefined),
      uploadFingerprint({ ...base, contentType: undefined }, undefined),
      uploadFingerprint(base, 'DEMO_FILE_RECEIVED'),
      // An empty procedure is not an absent one.
      uploadFingerprint(base, ''),
      // Parts do not run into each other: "ab" + "" is not "a" + "b".
      uploadFingerprint({ ...base, fileName: 'a.txtb', contentType: '' }, undefined),
    ];
    expect(new Set(fingerprints).size).toBe(fingerprints.length);
  });

  it("is never a subscription's fingerprint of the same bytes", () => {
    const bytes = Buffer.from('{"source":"SUBJECT","url":"https://x.example/"}');
    expect(creationFingerprint(bytes)).toBe(creationFingerprint(Buffer.from(bytes)));
    expect(creationFingerprint(bytes)).not.toBe(
      creationFingerprint(Buffer.from('{"url":"https://x.example/","source":"SUBJECT"}')),
    );
    expect(creationFingerprint(bytes)).not.toBe(
      uploadFingerprint({ fileName: undefined, contentType: undefined, content: bytes }, undefined),
    );
  });
});

describe('Function: setFileUnderKey', () => {
  const upload: UploadedFile = { fileName: 'a.txt', contentType: 'text/plain', content: Buffer.from('a') };
  const keyOf = (key: string): CallKey => ({
    digest: keyDigest({ tenant: 'demo', caller: 'basic:demo' }, key),
    fingerprint: uploadFingerprint(upload, 'DEMO_FILE_RECEIVED'),
    retentionHours: 24,
  });
  const answerOf = (outcome: FileOutcome) => ({
    status: outcome.failure?.status ?? 200,
    body: Buffer.from(outcome.failure?.code ?? outcome.file.fileGuid),
  });

  function prepare() {
    const documents = memoryDocumentStore();
    const keys = memoryIdempotencyStore();
    const ctx = { store: documents.store, allowedProcedures: ['DEMO_FILE_RECEIVED'] };
    const run = (key: CallKey) =>
      setFileUnderKey(ctx, checkUpload(ctx, upload, 'DEMO_FILE_RECEIVED'), {
        keys: keys.store,
        key,
        answerOf,
      });
    return { documents, keys, run };
  }

  it('stores and calls once; a retry gets the record and runs nothing', async () => {
    const { documents, keys, run } = prepare();
    const key = keyOf('k1');
    const first = await run(key);
    const again = await run(key);
    expect(first.ran).toBe(true);
    expect(again).toEqual({ ran: false, replay: keys.records.get(key.digest)!.answer });
    expect(documents.files.size).toBe(1);
    expect(documents.calls).toHaveLength(1);
  });

  it("records the failing procedure's 502 (the file stays) and replays it", async () => {
    const { documents, keys, run } = prepare();
    documents.failures.call = new DatabaseStatementError('raised', '50000');
    const key = keyOf('k2');
    await expect(run(key)).rejects.toMatchObject({ status: 502, code: 'procedure_failed' });
    expect(keys.records.get(key.digest)!.answer.status).toBe(502);
    expect(await run(key)).toMatchObject({ ran: false, replay: { status: 502 } });
    expect(documents.files.size).toBe(1);
  });

  it('records nothing for a grant the login lacks: the file stays, a retry runs', async () => {
    const { documents, keys, run } = prepare();
    documents.failures.call = new DatabasePermissionError('dbo.DEMO_FILE_RECEIVED', 'EXECUTE');
    const key = keyOf('k3');
    await expect(run(key)).rejects.toMatchObject({ status: 500, code: 'database_permission_denied' });
    expect(keys.records.size).toBe(0);
    documents.failures.call = undefined;
    expect((await run(key)).ran).toBe(true);
    expect(documents.files.size).toBe(2);
  });

  it('records nothing when the procedure took the transaction: the file is stored on its own, 502', async () => {
    const { documents, keys, run } = prepare();
    documents.failures.call = new DocumentTransactionLostError('ended');
    const key = keyOf('k4');
    const refusal = await run(key).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(ServiceError);
    expect(refusal).toMatchObject({ status: 502, details: { fileGUID: expect.any(String) } });
    expect(keys.records.size).toBe(0);
    expect(documents.files.has((refusal as ServiceError).details!.fileGUID as string)).toBe(true);
  });
});
