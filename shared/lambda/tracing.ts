import type { Context } from 'aws-lambda';
import { describeError } from '../core/log.js';
import { processWide } from '../core/process-wide.js';
import {
  continueTrace,
  startTrace,
  TRACEPARENT,
  TRACESTATE,
  type TraceContext,
} from '../core/trace-context.js';
import { bothRecorders, spanRecorder, useSpanRecorder } from '../core/tracing.js';
import { serviceLog } from './observability.js';

/** What this process's tracing is: not asked yet, loading the SDK, or settled (on or off). */
const loader = processWide('span-recorder-loader', () => ({
  loading: undefined as Promise<void> | undefined,
}));

/** `service.name` of the exported spans: `OTEL_SERVICE_NAME`, as OpenTelemetry's SDKs read it. */
const serviceName = (env: NodeJS.ProcessEnv) => env.OTEL_SERVICE_NAME?.trim() || 'erp-integration-gateway';

/**
 * Whether spans are exported (CONTRACT 8a): an OTLP endpoint is set, for all signals or for
 * traces, and the SDK is not disabled (`OTEL_SDK_DISABLED=true`, OpenTelemetry's own switch).
 */
export function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

const settled = Promise.resolve();

/**
 * Puts this process's span recorder in place, the first time tracing is configured: the adapter
 * and OpenTelemetry's SDK come with `import()` (a chunk of their own in the bundle), so a function
 * with tracing off loads none of it; awaited by the handler wrappers (http.ts, queue-consumer.ts)
 * before their first event, a resolved promise after. An SDK that fails to load leaves tracing off,
 * with a warning, rather than failing the function.
 */
export function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (loader.loading) return loader.loading;
  if (!tracingConfigured(env)) return settled;
  loader.loading = import('../adapters/otel/span-recorder.js').then(
    ({ createOtelSpanRecorder }) => {
      const exporter = createOtelSpanRecorder({ serviceName: serviceName(env) });
      // Beside one already in place (the local stack's memory of recent spans), not instead of it.
      const current = spanRecorder();
      useSpanRecorder(current.enabled ? bothRecorders(current, exporter) : exporter);
    },
    (error: unknown) => {
      serviceLog().warn('span export is off: the OpenTelemetry SDK did not load', describeError(error));
    },
  );
  return loader.loading;
}

/** Sends the spans recorded so far; a failure is only logged (the work is done, its spans are extra). */
export async function flushSpans(): Promise<void> {
  const recorder = spanRecorder();
  if (!recorder.enabled) return;
  try {
    await recorder.flush();
  } catch (error) {
    serviceLog().warn('span export failed', describeError(error));
  }
}

/**
 * The span of a direct invocation's work (the Lambda Invoke API: `webhookAdmin`), in the invoker's
 * trace (CONTRACT 8a). A direct invoke has no headers: its caller's W3C context comes in the
 * invoke's `ClientContext` (base64 JSON, given to the function as `context.clientContext`), as
 * `traceparent` and `tracestate` of its `Custom` object, where OpenTelemetry's AWS SDK
 * instrumentation puts them for an `Invoke` (`custom` as Lambda's mobile clients spell it is read
 * too); the local stack's Invoke API puts its caller's `traceparent` header there
 * (infra/local/lambda-invoke.ts). Without one, a new trace. Not the X-Ray header Lambda sets in
 * `_X_AMZN_TRACE_ID`: it is an environment variable of the process, not of the invocation, and
 * Lambda sets it whether or not the caller sent any trace.
 */
export function invokerTrace(context: Pick<Context, 'clientContext'> | undefined): TraceContext {
  const given = context?.clientContext as unknown as Record<string, unknown> | undefined;
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
  for (const key of ['Custom', 'custom']) {
    const custom = given?.[key];
    if (!custom || typeof custom !== 'object') continue;
    const fields = custom as Record<string, unknown>;
    const traceparent = text(fields[TRACEPARENT]);
    if (traceparent !== undefined) {
      return continueTrace({ traceparent, tracestate: text(fields[TRACESTATE]) });
    }
  }
  return startTrace();
}
