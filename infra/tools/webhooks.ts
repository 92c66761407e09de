import { parseArgs } from 'node:util';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';

/**
 * `npm run -s webhooks -- <action> …`: calls the webhook admin function (CONTRACT.md section 6)
 * through the Lambda Invoke API, on the local stack by default, or on a deployed stage with
 * `--stage` (credentials and region as the AWS CLI finds them). Prints the function's answer;
 * exits 1 when it refused the request, 2 on a usage error.
 */
export const USAGE = `usage: npm run -s webhooks -- <action> [options]

actions:
  status  --subject <id>                  the endpoint's state, the secret's last change, the last 20 attempts
  enable  --subject <id>                  enable a disabled endpoint again
  resend  --event <webhook-id>            send one event again (same webhook-id, a new series of attempts)
  recover --since <ISO time> [--subject <id>] [--dry-run]
                                          send again every event whose last outcome since then is
                                          failed (dead-lettered) or disabled; --dry-run lists them only
  notify  --subscription <id> | --since <ISO time>
                                          change notifications: a fresh table.changed to one
                                          subscription, or to every one whose attempts failed since

options:
  --tenant <id>       the tenant (default: demo on the local stack; required with --stage)
  --endpoint <url>    the Invoke API's endpoint (default WEBHOOKS_ENDPOINT, else the local stack at
                      http://127.0.0.1:\${PORT:-3000})
  --stage <stage>     a deployed stage: the function erp-integration-gateway-<stage>-webhookAdmin on AWS
  --function <name>   the function's name or ARN (default webhookAdmin, or the stage's)
  --region <region>   with --stage (default AWS_REGION, else eu-central-1)`;

const SERVICE = 'erp-integration-gateway';

export class UsageError extends Error {}

/** The admin event and where to send it, from the command line. */
export function webhookCommand(argv: readonly string[], env: NodeJS.ProcessEnv = process.env) {
  let parsed: ReturnType<typeof parse>;
  const parse = () =>
    parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        tenant: { type: 'string' },
        subject: { type: 'string' },
        subscription: { type: 'string' },
        event: { type: 'string' },
        since: { type: 'string' },
        'dry-run': { type: 'boolean' },
        endpoint: { type: 'string' },
        stage: { type: 'string' },
        function: { type: 'string' },
        region: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  try {
    parsed = parse();
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  const [action, ...rest] = positionals;
  if (values.help || !action) throw new UsageError('');
  if (rest.length > 0) throw new UsageError(`unexpected argument "${rest[0]}"`);
  const deployed = values.stage !== undefined;
  const tenant = values.tenant ?? (deployed ? undefined : 'demo');
  if (!tenant) throw new UsageError('--tenant is required with --stage');
  const subjectId =
    values.subject === undefined
      ? undefined
      : /^\d+$/.test(values.subject)
        ? Number(values.subject)
        : values.subject;
  // The function checks the values; the command line only puts them where the event has them.
  const event: Record<string, unknown> = { action, tenant };
  if (subjectId !== undefined) event.subjectId = subjectId;
  if (values.event !== undefined) event.eventId = values.event;
  if (values.subscription !== undefined) event.subscriptionId = values.subscription;
  if (values.since !== undefined) event.since = values.since;
  if (values['dry-run']) event.dryRun = true;
  const endpoint = deployed
    ? values.endpoint
    : (values.endpoint ?? env.WEBHOOKS_ENDPOINT ?? `http://127.0.0.1:${env.PORT || 3000}`);
  const functionName =
    values.function ?? (deployed ? `${SERVICE}-${values.stage}-webhookAdmin` : 'webhookAdmin');
  const region = values.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'eu-central-1';
  return { event, endpoint, functionName, region, deployed };
}

/** Invokes the admin function; answers its JSON answer (or the Lambda error it reported). */
export async function invokeWebhookAdmin(
  command: ReturnType<typeof webhookCommand>,
): Promise<Record<string, unknown>> {
  const client = new LambdaClient({
    region: command.region,
    ...(command.endpoint ? { endpoint: command.endpoint } : {}),
    // The local stack checks no signature; AWS gets the caller's own credentials.
    ...(command.deployed ? {} : { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }),
  });
  try {
    const result = await client.send(
      new InvokeCommand({
        FunctionName: command.functionName,
        Payload: new TextEncoder().encode(JSON.stringify(command.event)),
      }),
    );
    const text = result.Payload ? new TextDecoder().decode(result.Payload) : 'null';
    const answer = JSON.parse(text) as Record<string, unknown>;
    if (result.FunctionError)
      return { ok: false, error: `the function failed: ${answer?.errorMessage ?? text}` };
    return answer;
  } finally {
    client.destroy();
  }
}

async function main() {
  let command: ReturnType<typeof webhookCommand>;
  try {
    command = webhookCommand(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    if (error.message) console.error(`webhooks: ${error.message}`);
    console.error(USAGE);
    process.exit(2);
  }
  let answer: Record<string, unknown>;
  try {
    answer = await invokeWebhookAdmin(command);
  } catch (error) {
    console.error(
      `webhooks: could not invoke ${command.functionName}${command.endpoint ? ` at ${command.endpoint}` : ''}: ${(error as Error).message}`,
    );
    process.exit(1);
  }
  console.log(JSON.stringify(answer, null, 2));
  if (answer?.ok !== true) process.exitCode = 1;
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
