/** Figures of a reliability run, printed one line per class so that docs/development.md can quote them. */
export function printFigures(title: string, rows: Record<string, unknown>[]): void {
  const lines = rows.map((row) =>
    Object.entries(row)
      .map(([name, value]) => `${name}=${typeof value === 'number' ? Math.round(value * 10) / 10 : value}`)
      .join(' '),
  );
  console.log(`\nRELIABILITY ${title}\n${lines.map((line) => `  ${line}`).join('\n')}\n`);
}

export const megabytes = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;

/** Heap and RSS after a full collection (vitest runs this suite with --expose-gc). */
export function memory(): { rssMb: number; heapMb: number } {
  (globalThis as { gc?: () => void }).gc?.();
  const usage = process.memoryUsage();
  return { rssMb: megabytes(usage.rss), heapMb: megabytes(usage.heapUsed) };
}

/**
 * The settings of a tenant given a large share (CONTRACT.md section 2: `limits` in the registry,
 * or the deployment's parameters) and functions with room for it: the suites that measure load,
 * bad input and faults from one tenant, not fair share (tests/reliability/fair-share.test.ts).
 */
export const LARGE_SHARE = {
  REQUEST_FUNCTION_CONCURRENCY: '200',
  TENANT_CONCURRENT_REQUESTS: '150',
  TENANT_REQUESTS_PER_SECOND: '10000',
} as const;
