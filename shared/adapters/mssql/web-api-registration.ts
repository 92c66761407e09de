/**
 * Registering an operation (`vltyp` → procedure in WS_OPERATION) in a tenant's SQL Server database,
 * as a DBA would insert the row, with the checks the service makes when it reads it: `npm run
 * web-api -- operation` (docs/api.md "Adding an application or an operation"). Applications are
 * not here: they live in the tenant registry, or in an ERP's own register the service only reads.
 */
import type { Database } from '../../core/database.js';
import { parseQualifiedName } from '../../core/sql-names.js';

/** A request the registration cannot carry out; its message says why. */
export class RegistrationError extends Error {
  override readonly name = 'RegistrationError';
}

export interface OperationRegistration {
  readonly vltyp: number;
  readonly procedure: string;
  readonly rowName: string;
  readonly name?: string;
}

/** Adds the operation, or points an existing `vltyp` at the procedure; active either way. */
export async function registerWebApiOperation(
  db: Database,
  operation: OperationRegistration,
): Promise<'added' | 'changed'> {
  const { vltyp, procedure, rowName, name } = operation;
  if (!Number.isInteger(vltyp) || vltyp < 1 || vltyp > 2_147_483_647 || vltyp === 997) {
    throw new RegistrationError(
      "--vltyp must be a whole number from 1 (997 is the service's own: a result by id)",
    );
  }
  const qualified = parseQualifiedName(procedure);
  if (!qualified) throw new RegistrationError('--procedure must be NAME or schema.NAME');
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(rowName)) {
    throw new RegistrationError(
      '--row-name must be an XML name of letters, digits and _ (at most 64), e.g. Subject',
    );
  }
  if (name !== undefined && name.length > 200)
    throw new RegistrationError('--name must be at most 200 characters');
  const full = `${qualified.schema ?? 'dbo'}.${qualified.name}`;
  const [found] = await db.query(`SELECT CASE WHEN OBJECT_ID(@p1, N'P') IS NULL THEN 0 ELSE 1 END AS found`, [
    full,
  ]);
  if (!Number(found?.found)) {
    throw new RegistrationError(
      `No procedure ${full} in this database: create it first (one parameter @params nvarchar(max))`,
    );
  }
  const [row] = await db.query(
    `SET XACT_ABORT ON;
    BEGIN TRANSACTION;
    DECLARE @changed int = 0;
    UPDATE dbo.WS_OPERATION WITH (UPDLOCK, HOLDLOCK)
       SET PROCEDURE_NAME = @p2, ROW_NAME = @p3, NAZEV = COALESCE(@p4, NAZEV), AKTIVNI = 1
     WHERE VLTYP = @p1;
    SET @changed = @@ROWCOUNT;
    IF @changed = 0
      INSERT INTO dbo.WS_OPERATION (VLTYP, NAZEV, PROCEDURE_NAME, ROW_NAME, AKTIVNI) VALUES (@p1, @p4, @p2, @p3, 1);
    COMMIT TRANSACTION;
    SELECT @changed AS changed;`,
    [vltyp, full, rowName, name ?? null],
  );
  return Number(row?.changed) > 0 ? 'changed' : 'added';
}
