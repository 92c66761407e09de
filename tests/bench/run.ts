import { readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// Runs every tests/bench/*.bench.ts (or those named on the command line); each default-exports
// an async function that measures its subject against a baseline taken in the same run.
const here = dirname(fileURLToPath(import.meta.url));
const wanted = process.argv.slice(2);
const files = (await readdir(here))
  .filter((name) => name.endsWith('.bench.ts'))
  .filter((name) => wanted.length === 0 || wanted.some((w) => name.includes(w)))
  .sort();
for (const file of files) {
  console.log(`\n## ${file}`);
  const module = (await import(pathToFileURL(join(here, file)).href)) as { default?: () => Promise<void> };
  if (typeof module.default !== 'function') throw new Error(`${file} has no default export`);
  await module.default();
}
process.exit(0);
