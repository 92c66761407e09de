import { startFauxqs } from 'fauxqs';

/**
 * Starts the AWS emulator (S3 and SQS) on a free loopback port and points the SDK's environment at
 * it with local credentials; `env` is set on top. Stop the returned emulator after the suite.
 */
export async function startAwsEmulator(env: Record<string, string> = {}) {
  const emulator = await startFauxqs({ port: 0, host: '127.0.0.1', logger: false });
  const endpoint = `http://127.0.0.1:${emulator.port}`;
  Object.assign(process.env, {
    AWS_ENDPOINT_URL: endpoint,
    AWS_REGION: 'eu-central-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    ...env,
  });
  return { emulator, endpoint };
}
