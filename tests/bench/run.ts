import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { figures } from './measure.js';

// Runs every tests/bench/*.bench.ts (or those named on the command line); each default-exports
// an async function that measures its subject against a baseline taken in the same run. The
// figures go to .data/bench/speed.json as well (BENCH_OUTPUT names another file).
const here = dirname(fileURLToPath(import.meta.url));
// A log line per request would be most of what the benches print (set LOG_LEVEL to see them).
process.env.LOG_LEVEL ??= 'WARN';
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
const output = process.env.BENCH_OUTPUT ?? join(here, '..', '..', '.data', 'bench', 'speed.json');
await mkdir(dirname(output), { recursive: true });
await writeFile(
  output,
  `${JSON.stringify({ at: new Date().toISOString(), benches: files, figures }, null, 2)}\n`,
);
const missed = figures.filter((f) => f.met === false);
console.log(
  `\n${figures.length} figures written to ${output}; goals: ${figures.filter((f) => f.met).length} met, ${missed.length} not met` +
    (missed.length ? ` (${missed.map((f) => f.id).join(', ')})` : ''),
);
process.exit(0);
