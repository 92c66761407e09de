import { badRequest } from '../core/errors.js';
import { DEFAULT_CONTENT_TYPE } from '../core/files/media-type.js';
import { setFile } from '../core/files/set-file.js';
import type { DataApiRoute } from './data-api.js';
import { tenantDocumentStore } from './document-store.js';
import { readFilePart } from './multipart-form.js';

/** `POST /{tenant}/JsonAPI/File/setFile[?userDBProcedure=NAME]` (scope `files.write`) */
export const setFileRoute: DataApiRoute = async ({ tenant, request }) => {
  const procedures = request.query.getAll('userDBProcedure');
  if (procedures.length > 1)
    throw badRequest('invalid_procedure_name', 'userDBProcedure may be given only once');
  const upload = await readFilePart(request);
  const file = await setFile(
    { store: await tenantDocumentStore(tenant), allowedProcedures: tenant.procedures },
    upload,
    procedures[0],
  );
  return {
    status: 200,
    headers: { 'content-type': 'application/json; charset=utf-8' },
    body: JSON.stringify({
      fileGUID: file.fileGuid,
      fileName: file.fileName,
      size: file.size,
      contentType: file.contentType ?? DEFAULT_CONTENT_TYPE,
      sha256: file.sha256,
    }),
  };
};
