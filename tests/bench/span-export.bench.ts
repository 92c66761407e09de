import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { startLocalStack } from '../../infra/local/stack.js';
import { createOtelSpanRecorder } from '../../shared/adapters/otel/span-recorder.js';
import { noSpanRecorder, useSpanRecorder } from '../../shared/core/tracing.js';
import { median, p95, record, sampleInterleaved, sampleInterleavedCpu } from './measure.js';

/**
 * Span export (CONTRACT 8a, issue 49), against baselines of the same run:
 * - cold start (CPU of the process): a fresh process importing the `getRowsCount` handler bundled as `npm run package`
 *   bundles it (esbuild, the same plugins), from this tree with tracing off, and with tracing on
 *   (plus what its first event loads then: the OpenTelemetry chunk, the recorder made), against
 *   the same handler bundled from the branch point before trace context (`BENCH_TRACE_BASE`,
 *   default `a2cd7b1^`); goals +5 ms off, +40 ms on;
 * - what `@opentelemetry/core` (its W3C propagator) adds to a bundle's cold start, against an
 *   empty bundle: whether it could replace shared/core/trace-context.ts's parser (goal +5 ms);
 * - a warm read through the local stack with spans exported to an OTLP/HTTP receiver (another
 *   process) against the same read with tracing off, each run's flush included (CPU): goal +1 ms;
 *   most of it is the export's POST itself (about 0.3 ms of CPU), made after the answer has left;
 * - the same read's time to the answer (wall), what the caller waits for: goal +1 ms.
 */
const RUNS = Number(process.env.COLD_START_RUNS ?? 15);
const BASE = process.env.BENCH_TRACE_BASE ?? 'a2cd7b1^';
const OUT = join(process.cwd(), '.data', 'bench', 'span-export');

/** The bundle `npm run package` makes of `entry` (serverless.yml's esbuild settings), in `outdir`. */
async function bundle(entry: string, outdir: string): Promise<string> {
  const plugins = createRequire(import.meta.url)('../../infra/bundle/esbuild-plugins.cjs') as Plugin[];
  await build({
    entryPoints: [entry],
    outdir,
    bundle: true,
    minify: true,
    target: 'node22',
    platform: 'node',
    format: 'esm',
    outExtension: { '.js': '.mjs' },
    splitting: true,
    mainFields: ['module', 'main'],
    plugins,
    banner: {
      js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
    },
    logLevel: 'error',
  });
  const name = entry.split('/').pop()!.replace(/\.ts$/, '.mjs');
  return join(outdir, name);
}

/** This tree's sources at `commit`, beside this tree's node_modules. */
function checkout(commit: string, dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const archive = spawnSync(
    'git',
    ['archive', commit, 'functions', 'shared', 'infra/bundle', 'package.json'],
    {
      maxBuffer: 256 * 1024 * 1024,
    },
  );
  if (archive.status !== 0) throw new Error(`git archive ${commit}: ${archive.stderr}`);
  const untar = spawnSync('tar', ['-x', '-C', dir], { input: archive.stdout });
  if (untar.status !== 0) throw new Error(`tar: ${untar.stderr}`);
  symlinkSync(join(process.cwd(), 'node_modules'), join(dir, 'node_modules'));
}

/**
 * CPU time (user + system, ms) of a fresh `node` from its start to the end of `script`: Node's own
 * start included, as in a cold start. CPU rather than wall time: on a shared 2-core machine (a CI
 * run beside it) the wall time of a 100 ms process swings by more than the 5 ms looked for.
 */
function timeNode(script: string, env: Record<string, string> = {}): number {
  const done =
    'const used = process.cpuUsage(); process.stdout.write(String((used.user + used.system) / 1000));';
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', `${script}\n${done}`], {
    env: { PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`node -e ${script}: ${result.stderr}`);
  return Number(result.stdout);
}

/** Each subject's times over `RUNS` interleaved rounds (after one unmeasured round), sorted. */
function interleaved(subjects: readonly (() => number)[]): number[][] {
  for (const subject of subjects) subject();
  const times = subjects.map(() => [] as number[]);
  for (let run = 0; run < RUNS; run++) {
    for (const [n, subject] of subjects.entries()) times[n]!.push(subject());
  }
  return times.map((list) => list.sort((a, b) => a - b));
}

async function coldStarts(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  const baseDir = join(OUT, 'base');
  checkout(BASE, baseDir);
  const entry = 'functions/data-api/getRowsCount.ts';
  const baseBundle = await bundle(join(baseDir, entry), join(OUT, 'out-base'));
  const currentBundle = await bundle(join(process.cwd(), entry), join(OUT, 'out-current'));
  const chunks = join(OUT, 'out-current', 'getRowsCount.chunks');
  const otelChunk = readdirSync(chunks).find((name) => /^span-recorder-.*\.mjs$/.test(name));
  if (!otelChunk) throw new Error('no span-recorder chunk in the bundle');
  const url = (file: string) => pathToFileURL(file).href;
  const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' };
  const [base, off, on] = interleaved([
    () => timeNode(`await import(${JSON.stringify(url(baseBundle))});`),
    () => timeNode(`await import(${JSON.stringify(url(currentBundle))});`),
    // What tracing.ts's startTracing does on the first event: the chunk, the recorder.
    () =>
      timeNode(
        `await import(${JSON.stringify(url(currentBundle))});` +
          `const m = await import(${JSON.stringify(url(join(chunks, otelChunk)))});` +
          `Object.values(m).find((f) => typeof f === 'function')({ serviceName: 'bench' });`,
        endpoint,
      ),
  ]);
  const common = { unit: 'ms' as const, kind: 'difference' as const, baselineMedian: median(base!) };
  record({
    ...common,
    id: 'spanExport.coldStartOff',
    subject: 'getRowsCount bundle imported, tracing off (CPU)',
    baseline: `the same bundled at ${BASE}`,
    subjectMedian: median(off!),
    value: median(off!) - median(base!),
    goal: 5,
  });
  record({
    ...common,
    id: 'spanExport.coldStartOn',
    subject: 'getRowsCount bundle imported, tracing on: SDK chunk loaded, recorder made (CPU)',
    baseline: `the same bundled at ${BASE}`,
    subjectMedian: median(on!),
    value: median(on!) - median(base!),
    goal: 40,
  });

  // @opentelemetry/core's W3C propagator in a bundle of its own, against an empty bundle.
  const probeDir = join(OUT, 'core-probe');
  rmSync(probeDir, { recursive: true, force: true });
  mkdirSync(probeDir, { recursive: true });
  writeFileSync(join(probeDir, 'empty.ts'), 'export const handler = () => undefined;\n');
  writeFileSync(
    join(probeDir, 'propagator.ts'),
    "import { W3CTraceContextPropagator } from '@opentelemetry/core';\n" +
      'export const handler = new W3CTraceContextPropagator();\n',
  );
  symlinkSync(join(process.cwd(), 'node_modules'), join(probeDir, 'node_modules'));
  const empty = await bundle(join(probeDir, 'empty.ts'), join(probeDir, 'out'));
  const propagator = await bundle(join(probeDir, 'propagator.ts'), join(probeDir, 'out'));
  const [bare, withCore] = interleaved([
    () => timeNode(`await import(${JSON.stringify(url(empty))});`),
    () => timeNode(`await import(${JSON.stringify(url(propagator))});`),
  ]);
  record({
    id: 'spanExport.opentelemetryCoreCold',
    subject: "a bundle with @opentelemetry/core's W3CTraceContextPropagator (CPU)",
    baseline: 'an empty bundle',
    unit: 'ms',
    subjectMedian: median(withCore!),
    baselineMedian: median(bare!),
    value: median(withCore!) - median(bare!),
    kind: 'difference',
    goal: 5,
  });
}

/** An OTLP/HTTP receiver in a process of its own (a collector's CPU is not the function's): its URL. */
async function startReceiver() {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `require('node:http').createServer((q, r) => { q.resume(); q.on('end', () => r.end('{}')); })` +
        `.listen(0, '127.0.0.1', function () { console.log(this.address().port); });`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const port = await new Promise<string>((resolve) =>
    child.stdout.once('data', (data) => resolve(String(data).trim())),
  );
  return { url: `http://127.0.0.1:${port}`, stop: () => child.kill() };
}

async function warmRequests(): Promise<void> {
  const receiver = await startReceiver();
  const previous = process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = `${receiver.url}/v1/traces`;
  const recorder = createOtelSpanRecorder({ serviceName: 'bench' });
  const stack = await startLocalStack({
    port: 0,
    database: 'embedded',
    env: { TENANT_REQUESTS_PER_SECOND: '10000' },
  });
  try {
    const url = `${stack.url}/demo/JsonAPI/Data/getRowsCount/SUBJECT`;
    const BASIC = `Basic ${Buffer.from('demo:demo-password').toString('base64')}`;
    const call = async () => {
      const response = await fetch(url, {
        headers: {
          authorization: BASIC,
          traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
        },
      });
      if (response.status !== 200) throw new Error(`${response.status}: ${await response.text()}`);
      await response.arrayBuffer();
    };
    const [on, off] = await sampleInterleavedCpu(
      async () => {
        useSpanRecorder(recorder);
        await call();
        // The export of the request's spans (after the answer) counted with it.
        await recorder.flush();
      },
      async () => {
        useSpanRecorder(noSpanRecorder);
        await call();
      },
      Number(process.env.BENCH_TRACE_RUNS ?? 200),
      10,
    );
    record({
      id: 'spanExport.warmOnVsOff',
      subject: 'getRowsCount with spans exported over OTLP/HTTP, export included (CPU)',
      baseline: 'tracing off',
      unit: 'ms',
      subjectMedian: median(on),
      baselineMedian: median(off),
      subjectP95: p95(on),
      baselineP95: p95(off),
      value: median(on) - median(off),
      kind: 'difference',
      goal: 1,
    });
    // What the caller waits for: the answer, the export after it (after-answer.ts) not waited for.
    const [onWall, offWall] = await sampleInterleaved(
      async () => {
        useSpanRecorder(recorder);
        await call();
      },
      async () => {
        useSpanRecorder(noSpanRecorder);
        await call();
      },
      Number(process.env.BENCH_TRACE_RUNS ?? 200),
      10,
    );
    await recorder.flush();
    record({
      id: 'spanExport.warmAnswerOnVsOff',
      subject: 'getRowsCount with spans exported over OTLP/HTTP: time to the answer (wall)',
      baseline: 'tracing off',
      unit: 'ms',
      subjectMedian: median(onWall),
      baselineMedian: median(offWall),
      subjectP95: p95(onWall),
      baselineP95: p95(offWall),
      value: median(onWall) - median(offWall),
      kind: 'difference',
      goal: 1,
    });
  } finally {
    useSpanRecorder(noSpanRecorder);
    await stack.stop();
    receiver.stop();
    if (previous === undefined) delete process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
    else process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = previous;
  }
}

export default async function spanExportBench(): Promise<void> {
  await coldStarts();
  await warmRequests();
}
