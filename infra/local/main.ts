import { ConfigurationError, intFromEnv } from '../../shared/config/settings.js';
import { useSpanRecorder } from '../../shared/core/tracing.js';
import { recentSpansRecorder } from './recent-traces.js';
import { type LocalStack, startLocalStack } from './stack.js';

const started = Date.now();
// A development server's short lines unless LOG_FORMAT=json asks for what Lambda writes.
process.env.LOG_FORMAT ??= 'text';
// The last spans of the stack's functions, for `npm run trace -- <trace id>` (recent-traces.ts);
// with OTEL_EXPORTER_OTLP_ENDPOINT set they are exported as well (shared/lambda/tracing.ts).
useSpanRecorder(recentSpansRecorder());
let stack: LocalStack;
// The start waits on the database thread and the emulator, which do not hold the process open
// themselves (unref'd): without this, a refusal that closes them mid-start would end the process
// before it says why.
const starting = setInterval(() => undefined, 60_000);
try {
  stack = await startLocalStack({ port: intFromEnv('PORT', 3000, 0, 65535) });
} catch (error) {
  // A setting refused at start: one line per setting, naming it and the fix, never a stack trace.
  if (!(error instanceof ConfigurationError)) throw error;
  const [first, ...more] = error.message.split('; ');
  const prefix = /^Invalid tenant registry: /.exec(first ?? '')?.[0] ?? '';
  console.error(`npm start: ${first}`);
  for (const problem of more) console.error(`npm start: ${prefix}${problem}`);
  process.exit(1);
} finally {
  clearInterval(starting);
}
const base = stack.url;
console.log(`
ERP integration gateway: local stack ready in ${((Date.now() - started) / 1000).toFixed(1)} s

  Health       ${base}/health
  API docs     ${base}/docs   (OpenAPI: ${base}/openapi.json)
  Data API     ${base}/demo/JsonAPI/Data/getData/SUBJECT
               (HTTP Basic: demo / demo-password)
  OAuth 2.0    POST ${base}/demo/oauth2/token  grant_type=client_credentials
               (client: demo-client / demo-client-secret; then Authorization: Bearer <token>)
  Files        ${base}/demo/JsonAPI/File/setFile   (POST multipart, part "file")
               ${base}/demo/JsonAPI/File/getFile/{fileGUID}
  Web API      ${base}/demo/WebAPI/test
               (applications: demo-api-key / demo-api-hash, other-api-key / other-api-hash)
  Webhook      POST ${base}/_local/documents/received  {"subjectId":1,"documentId":123456}
               GET  ${base}/_local/webhook-sink  (SUBJECT 1's WEBHOOK_URL; secret demo-webhook-secret)
  Database     ${stack.databaseDescription}
  SQS/S3       ${stack.emulator.address ?? `http://127.0.0.1:${stack.emulator.port}`} (emulator)

  Try:  curl -u demo:demo-password ${base}/demo/JsonAPI/Data/getRowsCount/DOKUMENT

Stop with Ctrl+C.`);

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  console.log(`\n${signal} received: stopping`);
  await stack.stop();
  process.exit(0);
}
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));
