import { badRequest } from '../errors.js';

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The GUID of `{fileGUID}` in canonical upper-case form; 400 when it is not a GUID. */
export function parseFileGuid(raw: string | undefined): string {
  const value = raw ?? '';
  if (!GUID.test(value)) {
    throw badRequest(
      'invalid_file_guid',
      `"${value.slice(0, 64)}" is not a file GUID (expected xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)`,
    );
  }
  return value.toUpperCase();
}
