import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  firstRequestsAvailable,
  invokeInFreshProcess,
  loadedModuleName,
  outsideTheRepository,
  startFirstRequestEnvironment,
} from '../support/first-request.js';
import {
  extractFunction,
  type PackagedFunction,
  packagedFunctions,
  packageService,
  withPackagingLock,
} from '../support/packaged-service.js';
import { median, record } from './measure.js';

const RUNS = Number(process.env.COLD_START_RUNS ?? 15);
/** The goal: a cold start up to the end of what its first request loads, at most this × the empty module. */
const GOAL = 3;
const OUT = join(process.cwd(), '.data', 'bench');

/**
 * The timed fresh process: imports the module of argv[2], then loads each of argv[3..] in order
 * the way the first request loaded it: `require <url>` with require (a file through createRequire,
 * a builtin as require gets it), `import <url>` with `import()` (for a builtin, that builds its ES
 * module face, as it did in the request). Nothing else: no hooks, no timing inside (the parent
 * times the process from spawn to exit).
 */
const PROBE = `
const [entry, ...loads] = process.argv.slice(2);
await import(entry);
let require;
for (const load of loads) {
  const [via, url] = load.split(' ');
  if (via === 'import') await import(url);
  else if (url.startsWith('node:')) process.getBuiltinModule(url);
  else (require ??= process.getBuiltinModule('node:module').createRequire(entry))(new URL(url).pathname);
}
`;

interface Subject {
  readonly name: string;
  readonly args: string[];
  readonly env: Record<string, string>;
}

/** Wall time of `node <args>` from spawn to exit, in ms. */
function timeProcess(subject: Subject): number {
  const start = performance.now();
  const result = spawnSync(process.execPath, subject.args, { env: subject.env, encoding: 'utf8' });
  const elapsed = performance.now() - start;
  if (result.status !== 0)
    throw new Error(`${subject.name}: node ${subject.args.join(' ')} failed:\n${result.stderr}`);
  return elapsed;
}

interface Measured {
  readonly version: string;
  readonly fn: PackagedFunction;
  readonly label: string;
  readonly request: string;
  /** Files of the zip the first request loaded (entry included) and their bytes; builtins it loaded. */
  readonly files: string[];
  readonly fileBytes: number;
  readonly builtins: string[];
  /** Modules loaded from outside the zip (a baseline whose SDK came from the runtime, here node_modules). */
  readonly outside: string[];
  readonly init: Subject;
  readonly first: Subject;
}

/**
 * Each function's cold start as its first request sees it, against a fresh process importing an
 * empty module, all measured in one interleaved run so that they share the machine's load:
 * - *init*: importing the packaged handler (what Lambda does before the first request);
 * - *init + 1st request loads*: importing it, then every module its typical first request loaded
 *   (the goal: at most 3× the empty module).
 *
 * What a typical first request loads is not listed by hand: the bench runs that request (see
 * `typicalRequest` in tests/support/first-request.ts: a Data API read of a small table answered
 * inline, a file of 1.5 KB, a webhook delivered, a signed Web API call, a queued job run...)
 * through the packaged handler, extracted outside the repository, in a fresh Node process with the
 * function's environment from serverless.yml, against a T-SQL database, Secrets Manager (the
 * tenant registry) and SQS/S3 emulators on loopback, and records every module that process loaded:
 * the bundle's files and Node's builtins, and whether each came by `import` or `require` (an ES
 * module import of a builtin costs more). The timed process then loads exactly those, the same
 * way, in the same order, without running the request: the figure is the code a first request
 * brings in (reading, parsing, compiling and initialising modules), not its network round trips,
 * queries or password hashing, which no bundling changes. Each subject's ratio is the median, over
 * the runs, of its time over the mean of the empty-module runs just before and after it; the times
 * printed are medians. Writes .data/bench/cold-start.json.
 */
export default async function coldStartBench(): Promise<void> {
  if (!firstRequestsAvailable()) {
    console.log(
      'T-SQL engine not found (TSQL_ENGINE_DIR) and no MSSQL_URL: the first requests cannot run, cold-start bench not run',
    );
    return;
  }
  if (process.env.COLD_START_SKIP_PACKAGE !== '1') {
    const started = performance.now();
    await withPackagingLock(() => packageService());
    console.log(`npm run package: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }

  // COLD_START_BASELINE_DIR: another checkout of the service, already packaged, measured in the
  // same interleaved run (e.g. the commit before a change), its rows marked `before`. It is
  // extracted inside this repository, so that a bundle that leaves the AWS SDK to the runtime
  // finds it in node_modules (as the runtime's own copy would be found); this version's are
  // extracted outside it, where only what the zip holds can load.
  const baselineDir = process.env.COLD_START_BASELINE_DIR;
  const versions: [string, string][] = baselineDir
    ? [
        ['before', baselineDir],
        ['after', process.cwd()],
      ]
    : [['', process.cwd()]];
  const insideWork = join(OUT, 'cold-start');
  rmSync(insideWork, { recursive: true, force: true });
  mkdirSync(insideWork, { recursive: true });
  const outside = outsideTheRepository('cold-start-bench-');
  const probe = join(outside.dir, 'probe.mjs');
  const empty = join(outside.dir, 'empty.mjs');
  writeFileSync(probe, PROBE);
  writeFileSync(empty, '');

  const environment = await startFirstRequestEnvironment();
  try {
    const measured: Measured[] = [];
    for (const [version, serviceDir] of versions) {
      for (const fn of packagedFunctions(serviceDir)) {
        const root = join(version === 'before' ? insideWork : outside.dir, version, fn.name);
        extractFunction(fn, root);
        const env = environment.env(fn.name);
        const request = await environment.typicalRequest(fn.name);
        const outcome = await invokeInFreshProcess({
          root,
          entry: fn.entry,
          functionName: fn.name,
          event: request.event,
          env,
        });
        const problem = outcome.error ?? request.check(outcome.result);
        if (problem) {
          throw new Error(
            `${version} ${fn.name}: its first request (${request.description}) failed: ${problem}\n${outcome.output}`,
          );
        }
        const names = [...new Set(outcome.loaded.map(({ url }) => loadedModuleName(url, root) ?? url))];
        const files = names.filter((name) => !name.startsWith('node:') && !name.startsWith('file:'));
        const outsideFiles = names.filter((name) => name.startsWith('file:'));
        if (outsideFiles.length && version !== 'before') {
          throw new Error(`${fn.name} loaded modules from outside its zip: ${outsideFiles.join(', ')}`);
        }
        const builtins = names.filter((name) => name.startsWith('node:'));
        const loads = outcome.loaded.map(({ url, via }) => `${via} ${url}`);
        const entryUrl = pathToFileURL(join(root, fn.entry)).href;
        const label = version ? `${version} ${fn.name}` : fn.name;
        measured.push({
          version,
          fn,
          label,
          request: request.description,
          files,
          fileBytes: files.reduce((sum, file) => sum + statSync(join(root, file)).size, 0),
          builtins,
          outside: outsideFiles,
          init: { name: `${label} init`, args: [probe, entryUrl], env },
          first: { name: `${label} first request`, args: [probe, entryUrl, ...loads], env },
        });
      }
    }

    const floor: Subject = {
      name: 'empty module',
      args: [probe, pathToFileURL(empty).href],
      env: environment.env(measured[0]!.fn.name),
    };
    const subjects = measured.flatMap((m) => [m.init, m.first]);
    const times = new Map<string, number[]>([floor, ...subjects].map((s) => [s.name, []]));
    const ratios = new Map<string, number[]>(subjects.map((s) => [s.name, []]));
    // Warm the file cache, then round-robin with the empty module between every two subjects: each
    // run of a subject is divided by the mean of the empty-module runs just before and after it, so
    // that the machine's load (shared, and changing by the second) weighs on both sides alike.
    for (const subject of [floor, ...subjects]) timeProcess(subject);
    for (let run = 0; run < RUNS; run++) {
      let before = timeProcess(floor);
      times.get(floor.name)!.push(before);
      for (const subject of subjects) {
        const ms = timeProcess(subject);
        const after = timeProcess(floor);
        times.get(subject.name)!.push(ms);
        times.get(floor.name)!.push(after);
        ratios.get(subject.name)!.push(ms / ((before + after) / 2));
        before = after;
      }
    }
    const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
    const medianOf = (subject: Subject) => median(sorted(times.get(subject.name)!));
    const ratioOf = (subject: Subject) => median(sorted(ratios.get(subject.name)!));
    const emptyMs = medianOf(floor);

    const rows = measured.map((m) => ({
      ...(m.version ? { version: m.version } : {}),
      function: m.fn.name,
      label: m.label,
      firstRequest: m.request,
      entryBytes: m.fn.files.get(m.fn.entry)!.length,
      firstRequestFiles: m.files.length,
      firstRequestFileBytes: m.fileBytes,
      firstRequestBuiltins: m.builtins,
      firstRequestOutside: m.outside.length,
      zipBytes: m.fn.zipBytes,
      initMs: medianOf(m.init),
      initRatio: ratioOf(m.init),
      firstRequestMs: medianOf(m.first),
      firstRequestRatio: ratioOf(m.first),
      goalMet: ratioOf(m.first) <= GOAL,
    }));
    const kb = (bytes: number) => `${(bytes / 1024).toFixed(0)} KB`;
    console.log(
      `fresh Node ${process.version} process per import, median of ${RUNS} runs (x empty: median of each run ` +
        'over the empty-module runs beside it), ' +
        `NODE_OPTIONS="${floor.env.NODE_OPTIONS ?? ''}" (serverless.yml's); ` +
        `empty module: ${emptyMs.toFixed(1)} ms`,
    );
    console.log(
      `${'function'.padEnd(32)} ${'entry'.padStart(7)} ${'1st request loads'.padStart(24)} ${'zip'.padStart(8)}` +
        `   init ms (x empty)   init + 1st request loads ms (x empty)   goal <= ${GOAL}x`,
    );
    for (const row of rows) {
      const loads = `${kb(row.firstRequestFileBytes)} in ${row.firstRequestFiles}${row.firstRequestOutside ? `+${row.firstRequestOutside}` : ''} files`;
      console.log(
        `${row.label.padEnd(32)} ${kb(row.entryBytes).padStart(7)} ${loads.padStart(24)} ${kb(row.zipBytes).padStart(8)}` +
          `   ${row.initMs.toFixed(1).padStart(6)} (${row.initRatio.toFixed(2)}x)` +
          `       ${row.firstRequestMs.toFixed(1).padStart(6)} (${row.firstRequestRatio.toFixed(2)}x)` +
          `                       ${row.goalMet ? 'met' : 'NOT met'}`,
      );
    }
    for (const m of measured) {
      if (m.version === 'before') continue;
      record({
        id: `coldStart.${m.fn.name}.firstRequest`,
        subject: `${m.fn.name}: import + what its first request loads (${m.request})`,
        baseline: 'empty module',
        unit: 'ms',
        subjectMedian: medianOf(m.first),
        baselineMedian: emptyMs,
        value: ratioOf(m.first),
        kind: 'ratio',
        note: 'ratio: median of each run over the mean of the empty-module runs just before and after it',
        goal: GOAL,
      });
    }
    const file = join(OUT, 'cold-start.json');
    writeFileSync(
      file,
      `${JSON.stringify(
        {
          measuredAt: new Date().toISOString(),
          node: process.version,
          runs: RUNS,
          goal: GOAL,
          emptyMs,
          functions: rows,
        },
        null,
        2,
      )}\n`,
    );
    console.log(`written to ${relative(process.cwd(), file)}`);
  } finally {
    await environment.stop();
    outside.remove();
  }
}
