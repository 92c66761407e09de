/** Times `fn` `runs` times after `warmup` runs; returns milliseconds per run, sorted. */
export async function sample(fn: () => Promise<unknown>, runs: number, warmup = 3): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) times.push(await wallMs(fn));
  return times.sort((a, b) => a - b);
}

/** Milliseconds of wall time `fn` takes. */
async function wallMs(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/** Milliseconds of this process's CPU time (user + system) `fn` takes. */
async function cpuMs(fn: () => Promise<unknown>): Promise<number> {
  const start = process.cpuUsage();
  await fn();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

/**
 * Times two subjects in alternation (a, b, a, b, …), so that a noisy neighbour on a shared machine
 * slows both alike rather than whichever ran during its burst; both sorted.
 */
export function sampleInterleaved(
  a: () => Promise<unknown>,
  b: () => Promise<unknown>,
  runs: number,
  warmup = 3,
): Promise<[number[], number[]]> {
  return alternate(a, b, runs, warmup, wallMs);
}

/**
 * {@link sampleInterleaved} in CPU time of this process (user + system, ms) instead of wall time:
 * the work a subject costs, which other processes on a shared machine cannot lengthen. For
 * subjects that run wholly in this process (the local stack, its embedded database and the client).
 */
export function sampleInterleavedCpu(
  a: () => Promise<unknown>,
  b: () => Promise<unknown>,
  runs: number,
  warmup = 3,
): Promise<[number[], number[]]> {
  return alternate(a, b, runs, warmup, cpuMs);
}

/** `warmup` unmeasured runs of each, then `runs` measured ones in alternation; both sorted. */
async function alternate(
  a: () => Promise<unknown>,
  b: () => Promise<unknown>,
  runs: number,
  warmup: number,
  measure: (fn: () => Promise<unknown>) => Promise<number>,
): Promise<[number[], number[]]> {
  for (let i = 0; i < warmup; i++) {
    await a();
    await b();
  }
  const timesA: number[] = [];
  const timesB: number[] = [];
  for (let i = 0; i < runs; i++) {
    timesA.push(await measure(a));
    timesB.push(await measure(b));
  }
  return [timesA.sort((x, y) => x - y), timesB.sort((x, y) => x - y)];
}

export const median = (sorted: number[]) => sorted[Math.floor(sorted.length / 2)]!;
export const p95 = (sorted: number[]) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.95))]!;

/** One measured figure: a subject against its baseline from the same run, and the goal if it has one. */
export interface Figure {
  readonly id: string;
  readonly subject: string;
  readonly baseline: string;
  readonly unit: 'ms' | 'MB' | '/s' | 'sessions';
  readonly subjectMedian: number;
  readonly baselineMedian: number;
  readonly subjectP95?: number;
  readonly baselineP95?: number;
  /** subject / baseline, or subject − baseline for a `difference` figure. */
  readonly value: number;
  readonly kind: 'ratio' | 'difference';
  /** The goal: `value` at most this. */
  readonly goal?: number;
  readonly met?: boolean;
  readonly note?: string;
}

/** Every figure of this run, in the order measured (written to .data/bench/*.json by run.ts). */
export const figures: Figure[] = [];

const round = (n: number) => Math.round(n * 1000) / 1000;

/** Records a figure and prints it on one line. */
export function record(figure: Omit<Figure, 'met'>): Figure {
  const met = figure.goal === undefined ? undefined : figure.value <= figure.goal;
  const done: Figure = {
    ...figure,
    subjectMedian: round(figure.subjectMedian),
    baselineMedian: round(figure.baselineMedian),
    ...(figure.subjectP95 === undefined ? {} : { subjectP95: round(figure.subjectP95) }),
    ...(figure.baselineP95 === undefined ? {} : { baselineP95: round(figure.baselineP95) }),
    value: round(figure.value),
    met,
  };
  figures.push(done);
  const p = (m: number, q?: number) =>
    `median ${m.toFixed(2)} ${figure.unit}${q === undefined ? '' : `, p95 ${q.toFixed(2)} ${figure.unit}`}`;
  const value =
    figure.kind === 'ratio'
      ? `ratio ${figure.value.toFixed(2)}x`
      : `difference ${figure.value.toFixed(1)} ${figure.unit}`;
  const goal =
    figure.goal === undefined
      ? ''
      : ` (goal <= ${figure.goal}${figure.kind === 'ratio' ? 'x' : ` ${figure.unit}`}: ${met ? 'met' : 'NOT met'})`;
  console.log(
    `${figure.subject}: ${p(figure.subjectMedian, figure.subjectP95)} | ` +
      `${figure.baseline}: ${p(figure.baselineMedian, figure.baselineP95)} | ${value}${goal}` +
      (figure.note ? `\n  ${figure.note}` : ''),
  );
  return done;
}

/** Prints and records one subject against its baseline as a ratio of medians. */
export function report(
  subject: string,
  times: number[],
  baseline: string,
  baseTimes: number[],
  options: { id?: string; goal?: number; note?: string } = {},
): Figure {
  return record({
    id: options.id ?? subject,
    subject,
    baseline,
    unit: 'ms',
    subjectMedian: median(times),
    baselineMedian: median(baseTimes),
    subjectP95: p95(times),
    baselineP95: p95(baseTimes),
    value: median(times) / median(baseTimes),
    kind: 'ratio',
    goal: options.goal,
    note: options.note,
  });
}

/** Another database the same figures are measured on: its id prefix and its name in the printed lines. */
export interface OtherDatabase {
  readonly id: string;
  readonly label: string;
}

/**
 * How a figure is named and held to its goal on `on`: on the embedded database (no `on`) as given
 * with its goal; on another database its id prefixed, its subject marked, and no goal (the goals are
 * the embedded database's).
 */
export function figureNaming(on?: OtherDatabase) {
  return {
    goal: (value: number) => (on ? undefined : value),
    id: (name: string) => (on ? `${on.id}.${name}` : name),
    label: (text: string) => (on ? `${text} [${on.label}]` : text),
  };
}
