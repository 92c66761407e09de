import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SQL_DIR = join(ROOT, 'infra', 'sql', 'embedded');
const DATA_DIR = join(ROOT, '.data');

async function schemaFiles(): Promise<{ name: string; text: string }[]> {
  const names = (await readdir(SQL_DIR)).filter((n) => n.endsWith('.sql')).sort();
  return Promise.all(
    names.map(async (name) => ({ name, text: await readFile(join(SQL_DIR, name), 'utf8') })),
  );
}

/** Builds a fresh embedded database from `infra/sql/embedded/*.sql` (a few seconds). */
export async function buildDemoDatabase(): Promise<PGlite> {
  const db = new PGlite();
  for (const file of await schemaFiles()) {
    try {
      await db.exec(file.text);
    } catch (error) {
      throw new Error(`infra/sql/embedded/${file.name} failed: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
  // Statistics and the visibility map of the big table, so that paging finds a page's keys with
  // an index-only scan of its primary key (VACUUM cannot run inside the scripts' transaction).
  await db.exec('VACUUM ANALYZE dbo."DOKUMENT"');
  return db;
}

/**
 * The path of the prepared demo database (a data-dir dump), built once per version of the SQL
 * files and reused: opening it takes well under a second, building it several.
 */
export async function demoSnapshot(): Promise<string> {
  const files = await schemaFiles();
  // The salt changes when the build itself does (not only the SQL files).
  const hash = createHash('sha256').update('build 2: vacuum analyze DOKUMENT\0');
  for (const file of files) hash.update(file.name).update('\0').update(file.text).update('\0');
  const path = join(DATA_DIR, `demo-${hash.digest('hex').slice(0, 16)}.tar.gz`);
  if (await stat(path).catch(() => undefined)) return path;
  const db = await buildDemoDatabase();
  const dump = await db.dumpDataDir('gzip');
  await db.close();
  await mkdir(DATA_DIR, { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, Buffer.from(await dump.arrayBuffer()));
  await rename(temporary, path);
  return path;
}

/** Opens an in-memory copy of the demo database. */
export async function openDemoDatabase(): Promise<PGlite> {
  const snapshot = await readFile(await demoSnapshot());
  const db = new PGlite({ loadDataDir: new Blob([snapshot]) });
  await db.waitReady;
  await db.exec('SET search_path TO dbo, public');
  return db;
}
