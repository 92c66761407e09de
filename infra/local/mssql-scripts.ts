import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Database } from '../../shared/core/database.js';

/** The SQL Server scripts a DBA runs on a tenant database: schema, procedures and demo data. */
export const MSSQL_SCRIPTS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'sql', 'mssql');

/** The script files of infra/sql/mssql, in the order they run (by name). */
export function mssqlScriptFiles(): string[] {
  return readdirSync(MSSQL_SCRIPTS_DIR)
    .filter((name) => name.endsWith('.sql'))
    .sort();
}

/** The batches of one script of infra/sql/mssql, split at its `GO` lines, empty ones left out. */
export function scriptBatches(file: string): string[] {
  return readFileSync(join(MSSQL_SCRIPTS_DIR, file), 'utf8')
    .split(/^[ \t]*GO[ \t]*;?[ \t]*\r?$/im)
    .map((batch) => batch.trim())
    .filter((batch) => batch.length > 0);
}

/**
 * `connectionString` with a request time-out long enough for the scripts (the 100,000 demo rows
 * take seconds on SQL Server, longer on a busy machine; the driver's default is 15 s), unless it
 * names one itself.
 */
export function forScripts(connectionString: string): string {
  if (/^(mssql|sqlserver):\/\//i.test(connectionString)) {
    const url = new URL(connectionString);
    if (!url.searchParams.has('requestTimeout')) url.searchParams.set('requestTimeout', '600000');
    return url.toString();
  }
  return /request\s*timeout\s*=/i.test(connectionString)
    ? connectionString
    : `${connectionString.replace(/;\s*$/, '')};Request Timeout=600000`;
}

/** Runs infra/sql/mssql/*.sql on `db`, in name order, batch by batch; an error names its file. */
export async function runMssqlScripts(db: Pick<Database, 'query'>): Promise<void> {
  for (const file of mssqlScriptFiles()) {
    for (const batch of scriptBatches(file)) {
      await db.query(batch).catch((error: unknown) => {
        throw new Error(`infra/sql/mssql/${file} failed: ${(error as Error).message}`, { cause: error });
      });
    }
  }
}
