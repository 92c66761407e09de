import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Database } from '../../shared/core/database.js';

/** The SQL Server of the integration suites, which are skipped when MSSQL_URL is not set. */
export const mssqlUrl = process.env.MSSQL_URL;

const scriptsDir = join(import.meta.dirname, '../../infra/sql/mssql');

/** The batches of one script of infra/sql/mssql, split at its `GO` lines, empty ones left out. */
export function scriptBatches(file: string): string[] {
  return readFileSync(join(scriptsDir, file), 'utf8')
    .split(/^[ \t]*GO[ \t]*;?[ \t]*\r?$/im)
    .map((batch) => batch.trim())
    .filter((batch) => batch.length > 0);
}

/** Runs infra/sql/mssql/*.sql on `db`, in name order, batch by batch. */
export async function runMssqlScripts(db: Pick<Database, 'query'>): Promise<void> {
  for (const file of readdirSync(scriptsDir)
    .filter((name) => name.endsWith('.sql'))
    .sort()) {
    for (const batch of scriptBatches(file)) {
      await db.query(batch).catch((error: unknown) => {
        throw new Error(`${file} failed: ${(error as Error).message}`, { cause: error });
      });
    }
  }
}
