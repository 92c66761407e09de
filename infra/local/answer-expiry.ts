import { DeleteObjectsCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { describeError } from '../../shared/core/log.js';
import { serviceLog } from '../../shared/lambda/observability.js';

export interface AnswerExpiryOptions {
  readonly client: S3Client;
  readonly bucket: string;
  /** Objects older than this are deleted: the presigned URLs' lifetime, after which none can be read. */
  readonly maxAgeMs: number;
  /** Time between sweeps. */
  readonly intervalMs: number;
}

/**
 * Deletes large answers and files from the local bucket once their presigned URLs have expired.
 * The emulator keeps objects in memory (a 100,000-row answer is about 38 MB), so without this a
 * long session grows without bound; in AWS the bucket's lifecycle rule does the same job.
 */
export function startAnswerExpiry(options: AnswerExpiryOptions): {
  sweep(): Promise<number>;
  stop(): Promise<void>;
} {
  let running: Promise<number> | undefined;

  async function sweepOnce(): Promise<number> {
    const cutoff = Date.now() - options.maxAgeMs;
    let deleted = 0;
    let token: string | undefined;
    do {
      const page = await options.client.send(
        new ListObjectsV2Command({ Bucket: options.bucket, ContinuationToken: token }),
      );
      const expired = (page.Contents ?? []).filter(
        (object) => object.Key && object.LastModified && object.LastModified.getTime() <= cutoff,
      );
      if (expired.length > 0) {
        await options.client.send(
          new DeleteObjectsCommand({
            Bucket: options.bucket,
            Delete: { Objects: expired.map((object) => ({ Key: object.Key! })), Quiet: true },
          }),
        );
        deleted += expired.length;
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return deleted;
  }

  /** One sweep at a time; a failed one (emulator restarting) is logged and tried again next time. */
  function sweep(): Promise<number> {
    running ??= sweepOnce()
      .catch((error: unknown) => {
        serviceLog().warn('answer expiry failed', describeError(error));
        return 0;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  }

  const timer = setInterval(() => void sweep(), options.intervalMs);
  timer.unref();
  return {
    sweep,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
