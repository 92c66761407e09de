import { badRequest } from '../errors.js';
import { parseQualifiedName } from '../sql-names.js';
import type { ProcedureName } from './document-store.js';

const DEFAULT_SCHEMA = 'dbo';

function split(text: string): ProcedureName | undefined {
  const parsed = parseQualifiedName(text);
  return parsed ? { schema: parsed.schema ?? DEFAULT_SCHEMA, name: parsed.name } : undefined;
}

const same = (a: ProcedureName, b: ProcedureName) =>
  a.schema.toLowerCase() === b.schema.toLowerCase() && a.name.toLowerCase() === b.name.toLowerCase();

/**
 * The `userDBProcedure` a tenant may run, or 400. Names compare case-insensitively and an
 * unqualified name means schema `dbo`, so `demo_file_received` matches `dbo.DEMO_FILE_RECEIVED`.
 */
export function allowedProcedure(requested: string, allowed: readonly string[]): ProcedureName {
  const procedure = split(requested);
  if (!procedure) {
    throw badRequest(
      'invalid_procedure_name',
      `userDBProcedure "${requested.slice(0, 128)}" is not a procedure name (NAME or schema.NAME)`,
    );
  }
  if (
    !allowed.some((entry) => {
      const candidate = split(entry);
      return candidate !== undefined && same(candidate, procedure);
    })
  ) {
    throw badRequest(
      'procedure_not_allowed',
      `userDBProcedure "${requested}" is not allowed for this tenant; nothing was stored`,
    );
  }
  return procedure;
}
