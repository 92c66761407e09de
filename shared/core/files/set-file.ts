import { createHash, randomUUID } from 'node:crypto';
import { DatabasePermissionError } from '../database.js';
import { badRequest, ServiceError } from '../errors.js';
import type { DocumentStore, ProcedureName, StoredFileInfo } from './document-store.js';
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
  await ctx.store.save({ ...file, content: upload.content });
  if (!procedure) return file;

  let found: ProcedureName | undefined;
  try {
    found = await ctx.store.findProcedure(procedure);
    if (found) await ctx.store.callProcedure(found, file.fileGuid);
  } catch (error) {
    // The login may not run it (or what it touches, on the T-SQL engine): what to grant, and the file.
    if (error instanceof DatabasePermissionError) {
      throw new ServiceError(
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
    throw new ServiceError(
      502,
      'procedure_failed',
      `The file was stored, but procedure ${userDBProcedure} failed`,
      { cause: error, details: { fileGUID: file.fileGuid } },
    );
  }
  if (!found) {
    // SQL Server (and the T-SQL engine) show a login only the procedures it may execute.
    throw new ServiceError(
      502,
      'procedure_failed',
      `The file was stored, but procedure ${userDBProcedure} is not in the database, or the service's database login may not execute it (grant EXECUTE on it to the service's role)`,
      { details: { fileGUID: file.fileGuid } },
    );
  }
  return file;
}
