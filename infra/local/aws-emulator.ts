import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { startFauxqs } from 'fauxqs';
import { resetSettings } from '../../shared/config/settings.js';

/**
 * Starts the SQS/S3 emulator on a free loopback port and points the SDK's environment at it with
 * local credentials (`env` on top). With `bucket`, that bucket is created and becomes the
 * large-answer bucket. Settings are re-read afterwards.
 */
export async function startAwsEmulator(options: { env?: Record<string, string>; bucket?: string } = {}) {
  const emulator = await startFauxqs({ port: 0, host: '127.0.0.1', logger: false });
  const endpoint = `http://127.0.0.1:${emulator.port}`;
  Object.assign(process.env, {
    AWS_ENDPOINT_URL: endpoint,
    AWS_REGION: process.env.AWS_REGION ?? 'eu-central-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    S3_FORCE_PATH_STYLE: 'true',
    ...(options.bucket ? { LARGE_RESULT_BUCKET: options.bucket } : {}),
    ...options.env,
  });
  resetSettings();
  if (options.bucket) {
    const s3 = new S3Client({ endpoint, forcePathStyle: true });
    await s3.send(new CreateBucketCommand({ Bucket: options.bucket }));
    s3.destroy();
  }
  return { emulator, endpoint };
}
