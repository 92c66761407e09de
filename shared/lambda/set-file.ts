import { callerIdentity } from '../core/auth/caller.js';
import { badRequest } from '../core/errors.js';
import type { StoredFileInfo } from '../core/files/document-store.js';
import { DEFAULT_CONTENT_TYPE } from '../core/files/media-type.js';
import {
  checkUpload,
  type FileOutcome,
  setFile,
  setFileUnderKey,
  uploadFingerprint,
} from '../core/files/set-file.js';
import { callKey, IDEMPOTENCY_KEY_HEADER, type RecordedAnswer } from '../core/idempotency.js';
import type { DataApiRoute } from './data-api.js';
import { renderDataApiError } from './data-api-errors.js';
import { documentStoreOn, tenantDocumentDatabase } from './document-store.js';
import { recordedResponse, tenantIdempotencyStore } from './idempotency.js';
import { readFilePart } from './multipart-form.js';
import type { HttpRequest } from './request-context.js';

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** `setFile`'s answer of a stored file. */
function fileAnswer(file: StoredFileInfo): RecordedAnswer {
  const body = JSON.stringify({
    fileGUID: file.fileGuid,
    fileName: file.fileName,
    size: file.size,
    contentType: file.contentType ?? DEFAULT_CONTENT_TYPE,
    sha256: file.sha256,
  });
  return { status: 200, contentType: JSON_CONTENT_TYPE, body: Buffer.from(body, 'utf8') };
}

/**
 * The answer of an upload under a key as it leaves, to be recorded with the file: the file's, or
 * its procedure's failure exactly as the error middleware renders it for this request.
 */
function outcomeAnswer(request: HttpRequest, outcome: FileOutcome): RecordedAnswer {
  if (!outcome.failure) return fileAnswer(outcome.file);
  const { response } = renderDataApiError(outcome.failure, request, request.requestId);
  const body = response.body ?? '';
  return {
    status: response.status,
    contentType: response.headers?.['content-type'],
    body: typeof body === 'string' ? Buffer.from(body, 'utf8') : body,
  };
}

/**
 * `POST /{tenant}/JsonAPI/File/setFile[?userDBProcedure=NAME]` (scope `files.write`). With an
 * `Idempotency-Key` (CONTRACT 5a) the file is stored once: a retry gets the first answer, replayed.
 * The refusals before anything is stored (the form 415/400/413, the key's form, the procedure,
 * the name) come first and record nothing.
 */
export const setFileRoute: DataApiRoute = async ({ tenant, request, caller, trace }) => {
  const procedures = request.query.getAll('userDBProcedure');
  if (procedures.length > 1)
    throw badRequest('invalid_procedure_name', 'userDBProcedure may be given only once');
  const upload = await readFilePart(request);
  const key = callKey(
    request.headers[IDEMPOTENCY_KEY_HEADER],
    { tenant: tenant.id, caller: callerIdentity(caller) },
    () => uploadFingerprint(upload, procedures[0]),
    tenant.idempotencyRetentionHours,
  );
  // The key's record commits with the SVCDOC row: both in the document database.
  const db = await tenantDocumentDatabase(tenant, trace);
  const files = { store: documentStoreOn(db), allowedProcedures: tenant.procedures };
  if (!key) return recordedResponse(fileAnswer(await setFile(files, upload, procedures[0])), false);
  const checked = checkUpload(files, upload, procedures[0]);
  const outcome = await setFileUnderKey(files, checked, {
    keys: tenantIdempotencyStore(db, tenant),
    key,
    answerOf: (done) => outcomeAnswer(request, done),
  });
  if (!outcome.ran) return recordedResponse(outcome.replay, true);
  return recordedResponse(fileAnswer(outcome.value), false);
};
