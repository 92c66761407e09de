/**
 * `npm run trace -- <trace id or traceparent>`: one trace as `npm start` recorded it (issue 49),
 * its spans as a tree, each with its kind, duration and attributes; no collector, no AWS. Reads
 * `GET /_local/traces?traceId=` of the stack at `BASE` (default `http://127.0.0.1:${PORT:-3000}`).
 */

interface Span {
  readonly name: string;
  readonly kind: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly startTime: string;
  readonly durationMs: number;
  readonly failed?: boolean;
  readonly attributes: Record<string, unknown>;
  readonly links?: { traceId: string; spanId: string }[];
}

/** The spans as indented lines: each under its parent, those whose parent is not here at the top. */
export function traceLines(spans: readonly Span[]): string[] {
  const ids = new Set(spans.map((span) => span.spanId));
  const children = new Map<string | undefined, Span[]>();
  for (const span of spans) {
    const parent = span.parentSpanId && ids.has(span.parentSpanId) ? span.parentSpanId : undefined;
    children.set(parent, [...(children.get(parent) ?? []), span]);
  }
  const lines: string[] = [];
  const walk = (parent: string | undefined, depth: number) => {
    for (const span of children.get(parent) ?? []) {
      const attributes = Object.entries(span.attributes)
        .map(([key, value]) => `${key}=${value}`)
        .join(' ');
      const links = span.links?.length ? ` links=${span.links.length}` : '';
      lines.push(
        `${'  '.repeat(depth)}${span.name} [${span.kind}] ${span.durationMs.toFixed(1)} ms${span.failed ? ' FAILED' : ''}` +
          `${attributes ? `  ${attributes}` : ''}${links}  span ${span.spanId}`,
      );
      walk(span.spanId, depth + 1);
    }
  };
  walk(undefined, 0);
  return lines;
}

async function main(): Promise<void> {
  const asked = process.argv[2];
  if (!asked) {
    console.error(
      'usage: npm run trace -- <trace id or traceparent>   (the stack of npm start, at BASE or PORT)',
    );
    process.exit(2);
  }
  const base = process.env.BASE ?? `http://127.0.0.1:${process.env.PORT || 3000}`;
  let response: Response;
  try {
    response = await fetch(`${base}/_local/traces?traceId=${encodeURIComponent(asked)}`);
  } catch {
    console.error(`npm run trace: no stack answers at ${base} (is npm start running?)`);
    process.exit(1);
  }
  const body = (await response.json()) as { message?: string; traceId?: string; spans?: Span[] };
  if (!response.ok) {
    console.error(`npm run trace: ${body.message ?? response.status}`);
    process.exit(1);
  }
  if (!body.spans?.length) {
    console.log(
      `trace ${body.traceId}: no spans kept (an unsampled trace, or older than the last 20,000 spans)`,
    );
    return;
  }
  console.log(`trace ${body.traceId}: ${body.spans.length} spans`);
  for (const line of traceLines(body.spans)) console.log(line);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
