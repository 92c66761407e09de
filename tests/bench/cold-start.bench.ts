import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { readServerlessConfig } from '../../infra/local/serverless-config.js';
import {
  codeFiles,
  extractFunction,
  packagedFunctions,
  packageService,
  withPackagingLock,
} from '../support/packaged-service.js';
import { median } from './measure.js';

const RUNS = Number(process.env.COLD_START_RUNS ?? 15);
const OUT = join(process.cwd(), '.data', 'bench');
// Inside the repository so that `@aws-sdk/*`, left out of the bundles because the Lambda runtime
// provides it, resolves from node_modules as it does from the runtime's own copy.
const WORK = join(OUT, 'cold-start');

/**
 * Fresh process run by the bench: imports the module named by argv[2]; with argv[3] = `first`,
 * then imports every other module of the package as well: what a first request may load on
 * demand (the SQL Server driver, the AWS SDK clients...), so what lazy loading moved out of init
 * shows up here instead of disappearing.
 */
const PROBE = `
const [entry, mode, ...lazy] = process.argv.slice(2);
await import(entry);
if (mode === 'first') for (const chunk of lazy) await import(chunk);
`;

interface Subject {
  readonly name: string;
  readonly args: string[];
}

/** Wall time of `node <args>` from spawn to exit, in ms. */
function timeProcess(args: string[], nodeOptions: string): number {
  const start = performance.now();
  const result = spawnSync(process.execPath, args, {
    env: { ...process.env, NODE_OPTIONS: nodeOptions },
    encoding: 'utf8',
  });
  const elapsed = performance.now() - start;
  if (result.status !== 0) throw new Error(`node ${args.join(' ')} failed:\n${result.stderr}`);
  return elapsed;
}

/**
 * Each function's packaged bundle: its size, and the time a fresh Node process takes to import it
 * (Lambda's init) and to import it with everything it loads lazily (init plus what a first request
 * may load), against a fresh process importing an empty module, all measured in one interleaved
 * run so that they share the machine's load. Writes .data/bench/cold-start.json.
 */
export default async function coldStartBench(): Promise<void> {
  if (process.env.COLD_START_SKIP_PACKAGE !== '1') {
    const started = performance.now();
    await withPackagingLock(() => packageService());
    console.log(`npm run package: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  // As deployed: the provider's NODE_OPTIONS (e.g. --enable-source-maps) apply to every function.
  // COLD_START_NODE_OPTIONS overrides them (e.g. "" to compare with a plain `node`).
  const nodeOptions =
    process.env.COLD_START_NODE_OPTIONS ??
    String(readServerlessConfig().provider.environment?.NODE_OPTIONS ?? '');
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  const probe = join(WORK, 'probe.mjs');
  const empty = join(WORK, 'empty.mjs');
  writeFileSync(probe, PROBE);
  writeFileSync(empty, '');

  // COLD_START_BASELINE_DIR: another checkout of the service, already packaged, measured in the
  // same interleaved run (e.g. the commit before a change), its rows marked `before`.
  const baselineDir = process.env.COLD_START_BASELINE_DIR;
  const versions: [string, string][] = baselineDir
    ? [
        ['before', baselineDir],
        ['after', process.cwd()],
      ]
    : [['', process.cwd()]];
  const functions = versions
    .flatMap(([version, serviceDir]) =>
      packagedFunctions(serviceDir).map((fn) => ({
        version,
        fn,
        label: version ? `${version} ${fn.name}` : fn.name,
      })),
    )
    .map(({ version, fn, label }) => {
      const dir = join(WORK, version, fn.name);
      const entry = extractFunction(fn, dir);
      const code = codeFiles(fn);
      // Its own chunks, and the packages outside the bundle it imports on demand (the AWS SDK's).
      const lazy = [
        ...code.filter(([path]) => path !== fn.entry).map(([path]) => pathToFileURL(join(dir, path)).href),
        ...new Set(
          code.flatMap(([, data]) =>
            [...data.toString('utf8').matchAll(/import\("(@[^"]+)"\)/g)].map((m) => m[1]!),
          ),
        ),
      ];
      return {
        fn,
        version,
        label,
        bundleBytes: fn.files.get(fn.entry)!.length,
        lazyBytes: code.filter(([path]) => path !== fn.entry).reduce((sum, [, data]) => sum + data.length, 0),
        init: { name: `${label} init`, args: [probe, pathToFileURL(entry).href, 'init'] } as Subject,
        first: {
          name: `${label} first`,
          args: [probe, pathToFileURL(entry).href, 'first', ...lazy],
        } as Subject,
      };
    });
  const floor: Subject = { name: 'empty module', args: [probe, pathToFileURL(empty).href, 'init'] };
  const subjects = [floor, ...functions.flatMap((f) => [f.init, f.first])];
  const times = new Map<string, number[]>(subjects.map((s) => [s.name, []]));
  // Warm the file cache, then round-robin so that every subject sees the same load.
  for (const subject of subjects) timeProcess(subject.args, nodeOptions);
  for (let run = 0; run < RUNS; run++) {
    for (const subject of subjects) times.get(subject.name)!.push(timeProcess(subject.args, nodeOptions));
  }
  const medianOf = (subject: Subject) => median([...times.get(subject.name)!].sort((a, b) => a - b));
  const emptyMs = medianOf(floor);

  const rows = functions.map((f) => ({
    ...(f.version ? { version: f.version } : {}),
    function: f.fn.name,
    label: f.label,
    bundleBytes: f.bundleBytes,
    lazyChunkBytes: f.lazyBytes,
    zipBytes: f.fn.zipBytes,
    initMs: medianOf(f.init),
    initRatio: medianOf(f.init) / emptyMs,
    withLazyMs: medianOf(f.first),
    withLazyRatio: medianOf(f.first) / emptyMs,
  }));
  const kb = (bytes: number) => `${(bytes / 1024).toFixed(0)} KB`;
  console.log(
    `fresh Node ${process.version} process, median of ${RUNS} runs, NODE_OPTIONS="${nodeOptions}"; ` +
      `empty module: ${emptyMs.toFixed(1)} ms`,
  );
  console.log(
    'function                         bundle   lazy chunks  zip       init ms (x empty)   init + lazy ms (x empty)',
  );
  for (const row of rows) {
    console.log(
      `${row.label.padEnd(32)} ${kb(row.bundleBytes).padStart(8)} ${kb(row.lazyChunkBytes).padStart(10)} ` +
        `${kb(row.zipBytes).padStart(9)}   ${row.initMs.toFixed(1).padStart(6)} (${row.initRatio.toFixed(2)}x)` +
        `      ${row.withLazyMs.toFixed(1).padStart(6)} (${row.withLazyRatio.toFixed(2)}x)`,
    );
  }
  const current = rows.filter((row) => !('version' in row) || row.version === 'after');
  const worst = current.reduce((a, b) => (b.initRatio > a.initRatio ? b : a));
  console.log(`slowest init: ${worst.label} at ${worst.initRatio.toFixed(2)}x the empty module (goal <= 2x)`);
  const file = join(OUT, 'cold-start.json');
  writeFileSync(
    file,
    `${JSON.stringify(
      {
        measuredAt: new Date().toISOString(),
        node: process.version,
        nodeOptions,
        runs: RUNS,
        emptyMs,
        functions: rows,
      },
      null,
      2,
    )}\n`,
  );
  console.log(`written to ${relative(process.cwd(), file)}`);
}
