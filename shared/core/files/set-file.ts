import { createHash, randomUUID } from 'node:crypto';
import { DatabasePermissionError } from '../database.js';
import { badRequest, ServiceError } from '../errors.js';
import {
  type CallKey,
  type IdempotencyStore,
  type KeyedOutcome,
  onceUnderKey,
  type RecordedAnswer,
  requestFingerprint,
} from '../idempotency.js';
import {
  type DocumentStore,
  DocumentTransactionLostError,
  type ProcedureName,
  type StoredFileInfo,
} from './document-store.js';
import { hasUnsafeFileNameCharacter } from './file-name.js';
import { isMediaType } from './media-type.js';
import { allowedProcedure } from './procedures.js';

/** Largest file `setFile` accepts (HTTP API hands a Lambda at most 6 MB, base64 included). */
export const MAX_UPLOAD_BYTES = 4 * 1024 * 1024;
const MAX_FILE_NAME_LENGTH = 260; // SVCDOC.FILENAME

/** The file part of an upload, as the client sent it. */
export interface UploadedFile {
  readonly fileName: string | undefined;
  readonly contentType: string | undefined;
  readonly content: Buffer;
}

export interface SetFileContext {
  readonly store: DocumentStore;
  /** The tenant's `procedures`. */
  readonly allowedProcedures: readonly string[];
}

/** 413 for a file over {@link MAX_UPLOAD_BYTES}. */
export function fileTooLarge(): ServiceError {
  return new ServiceError(413, 'file_too_large', `The file is larger than ${MAX_UPLOAD_BYTES} bytes (4 MB)`);
}

function checkedFileName(fileName: string | undefined): string {
  if (!fileName) throw badRequest('invalid_file_name', 'The part "file" has no file name');
  if (fileName.length > MAX_FILE_NAME_LENGTH) {
    throw badRequest('invalid_file_name', `The file name is longer than ${MAX_FILE_NAME_LENGTH} characters`);
  }
  if (hasUnsafeFileNameCharacter(fileName)) {
    throw badRequest(
      'invalid_file_name',
      'The file name contains control characters (C0, C1) or bidirectional formatting characters',
    );
  }
  return fileName;
}

function checkedContentType(contentType: string | undefined): string | undefined {
  if (contentType === undefined || contentType === '') return undefined;
  if (!isMediaType(contentType)) {
    throw badRequest(
      'invalid_content_type',
      'The Content-Type of the part "file" is not a media type (type/subtype, at most 200 characters)',
    );
  }
  return contentType;
}

/** An upload past every check that refuses it before anything is stored. */
export interface CheckedUpload {
  readonly file: StoredFileInfo;
  readonly content: Buffer;
  /** The allowed procedure, as requested. */
  readonly procedure: ProcedureName | undefined;
  /** `userDBProcedure` as sent (its name in the answer). */
  readonly requested: string | undefined;
}

/**
 * `setFile`'s checks that refuse an upload before anything is stored (400, 413): the procedure
 * allowed, the file name, the part's media type, the size. The file gets its GUID here.
 */
export function checkUpload(
  ctx: Pick<SetFileContext, 'allowedProcedures'>,
  upload: UploadedFile,
  userDBProcedure: string | undefined,
): CheckedUpload {
  const procedure =
    userDBProcedure === undefined ? undefined : allowedProcedure(userDBProcedure, ctx.allowedProcedures);
  const fileName = checkedFileName(upload.fileName);
  const contentType = checkedContentType(upload.contentType);
  if (upload.content.length > MAX_UPLOAD_BYTES) throw fileTooLarge();
  const file: StoredFileInfo = {
    fileGuid: randomUUID().toUpperCase(),
    fileName,
    contentType,
    size: upload.content.length,
    sha256: createHash('sha256').update(upload.content).digest('hex'),
  };
  return { file, content: upload.content, procedure, requested: userDBProcedure };
}

/**
 * The procedure called with the stored file's GUID: undefined when it ran, else the answer its
 * failure gets (502 `procedure_failed`, or 500 for a grant the login lacks), which names the file
 * that stays stored. A failure that took the transaction with it is thrown as it came.
 */
async function procedureFailure(
  store: DocumentStore,
  checked: CheckedUpload & { procedure: ProcedureName },
): Promise<ServiceError | undefined> {
  const { file, requested } = checked;
  let found: ProcedureName | undefined;
  try {
    found = await store.findProcedure(checked.procedure);
    if (found) await store.callProcedure(found, file.fileGuid);
  } catch (error) {
    if (error instanceof DocumentTransactionLostError) throw error;
    // The login may not run it (or what it touches, on the T-SQL engine): what to grant, and the file.
    if (error instanceof DatabasePermissionError) {
      return new ServiceError(
        500,
        'database_permission_denied',
        `The file was stored, but t${error.message.slice(1)}`,
        {
          cause: error,
          details: { fileGUID: file.fileGuid },
          expose: true,
        },
      );
    }
    return new ServiceError(
      502,
      'procedure_failed',
      `The file was stored, but procedure ${requested} failed`,
      {
        cause: error,
        details: { fileGUID: file.fileGuid },
      },
    );
  }
  if (!found) {
    // SQL Server (and the T-SQL engine) show a login only the procedures it may execute.
    return new ServiceError(
      502,
      'procedure_failed',
      `The file was stored, but procedure ${requested} is not in the database, or the service's database login may not execute it (grant EXECUTE on it to the service's role)`,
      { details: { fileGUID: file.fileGuid } },
    );
  }
  return undefined;
}

/** Stores a checked upload and calls its procedure, each statement on its own (no key). */
async function storeChecked(store: DocumentStore, checked: CheckedUpload): Promise<StoredFileInfo> {
  const { file, content, procedure } = checked;
  await store.save({ ...file, content });
  if (!procedure) return file;
  const failure = await procedureFailure(store, { ...checked, procedure });
  if (failure) throw failure;
  return file;
}

/**
 * `setFile`: checks the procedure before anything is stored, stores the file in `SVCDOC`, then
 * calls the procedure with the new GUID. A failing procedure leaves the file stored: 502 with its
 * `fileGUID`, so the caller can still use or retry it.
 */
export async function setFile(
  ctx: SetFileContext,
  upload: UploadedFile,
  userDBProcedure: string | undefined,
): Promise<StoredFileInfo> {
  return storeChecked(ctx.store, checkUpload(ctx, upload, userDBProcedure));
}

/** The fingerprint of an upload (CONTRACT 5a): the file part's bytes, name and type, and `userDBProcedure`; never the multipart boundary. */
export function uploadFingerprint(upload: UploadedFile, userDBProcedure: string | undefined): string {
  return requestFingerprint(SET_FILE_ROUTE, [
    upload.content,
    upload.fileName,
    upload.contentType,
    userDBProcedure,
  ]);
}

/** The route's name in a fingerprint: another route with the same parts is another request. */
const SET_FILE_ROUTE = 'JsonAPI/File/setFile';

/** What a `setFile` under a key came to: the file stored, or its procedure's failure (the answer an error). */
export interface FileOutcome {
  readonly file: StoredFileInfo;
  readonly failure?: ServiceError;
}

/** A `setFile` sent with an `Idempotency-Key` (CONTRACT 5a). */
export interface KeyedUpload {
  /** The keys' records of the document database, where the file commits. */
  readonly keys: IdempotencyStore;
  readonly key: CallKey;
  /** The answer as it will leave (status, type, body), recorded with the file. */
  answerOf(outcome: FileOutcome): RecordedAnswer;
}

/**
 * `setFile` under its key (CONTRACT 5a): the `SVCDOC` row, the procedure's writes and the answer's
 * record commit in one transaction, so that a retry gets the first answer and stores nothing. A
 * failing procedure goes back to its save point and the file stays, as without a key: its 502 is
 * the answer, recorded and replayed. Two answers are not recorded, so that a retry runs again: a
 * grant the login lacks (the file commits; the deployment mends the grant) and a procedure that
 * took the transaction with it (nothing committed; the file is stored on its own, as without a
 * key, so that the 502 still names a file that exists). Resolves with the stored file or the
 * recorded answer of the first call; throws the procedure's failure as without a key.
 */
export async function setFileUnderKey(
  ctx: SetFileContext,
  checked: CheckedUpload,
  keyed: KeyedUpload,
): Promise<KeyedOutcome<StoredFileInfo>> {
  const { key } = keyed;
  return onceUnderKey(keyed.keys, key, async (hold) => {
    const { file, content, procedure } = checked;
    let outcome: FileOutcome;
    try {
      outcome = await hold!.commit(async (tx) => {
        const store = ctx.store.within(tx);
        await store.save({ ...file, content });
        const failure = procedure ? await procedureFailure(store, { ...checked, procedure }) : undefined;
        const done: FileOutcome = { file, failure };
        if (failure?.code === 'database_permission_denied') return { value: done };
        return { value: done, record: { fingerprint: key.fingerprint, answer: keyed.answerOf(done) } };
      });
    } catch (error) {
      if (!(error instanceof DocumentTransactionLostError)) throw error;
      await ctx.store.save({ ...file, content });
      outcome = {
        file,
        failure: new ServiceError(
          502,
          'procedure_failed',
          `The file was stored, but procedure ${checked.requested} failed: it ended the service's transaction`,
          { cause: error, details: { fileGUID: file.fileGuid } },
        ),
      };
    }
    if (outcome.failure) throw outcome.failure;
    return outcome.file;
  });
}
