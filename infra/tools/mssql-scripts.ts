import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Database } from '../../shared/core/database.js';

/**
 * The SQL Server scripts, in two parts kept apart (docs/sql-server.md, "What the ERP owns and what
 * the service owns"): `service/` creates only the service's own objects and is what `npm run
 * db:apply` runs on a tenant's database; `demo/` lays out what the ERP would own (its tables, the
 * view, the document table, applications), fills it with demo data and adds the demo's procedures
 * and operations, and runs only with `--demo` or where the local stack builds its own database.
 */
export const MSSQL_SCRIPTS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'sql', 'mssql');

/** Which scripts: the service's alone (a tenant's database), or with the demo's around them. */
export interface ScriptSelection {
  readonly demo: boolean;
}

const scriptsOf = (part: 'demo' | 'service') =>
  readdirSync(join(MSSQL_SCRIPTS_DIR, part))
    .filter((name) => name.endsWith('.sql'))
    .map((name) => `${part}/${name}`);

/**
 * The script files (paths under infra/sql/mssql) in the order they run: by their number, so the
 * demo's ERP schema comes before the service's objects and the demo operations after them.
 */
export function mssqlScriptFiles(selection: ScriptSelection = { demo: true }): string[] {
  return [...(selection.demo ? scriptsOf('demo') : []), ...scriptsOf('service')].sort((a, b) =>
    basename(a).localeCompare(basename(b)),
  );
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

/**
 * Runs the scripts on `db`, in order, batch by batch; an error names its file. By default the
 * whole demo (the local stack's and the tests' own databases); `{ demo: false }` only the service's.
 */
export async function runMssqlScripts(
  db: Pick<Database, 'query'>,
  selection: ScriptSelection = { demo: true },
): Promise<void> {
  for (const file of mssqlScriptFiles(selection)) {
    for (const batch of scriptBatches(file)) {
      await db.query(batch).catch((error: unknown) => {
        throw new Error(`infra/sql/mssql/${file} failed: ${(error as Error).message}`, { cause: error });
      });
    }
  }
}
