import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import {
  ANSWER_STORE_UNAVAILABLE,
  type LargeObjectStore,
  type LargeObjectUpload,
} from '../../core/answers.js';
import { ServiceError } from '../../core/errors.js';

/** S3 unreachable or refusing: the caller is told to try again (503), not that the service broke. */
const storageUnavailable = (error: unknown) =>
  new ServiceError(503, ANSWER_STORE_UNAVAILABLE, 'The answer store is not reachable; try again later', {
    cause: error,
  });

let sharedClient: S3Client | undefined;

/** The S3 client of this process (endpoint from `AWS_ENDPOINT_URL` where set, e.g. the local emulator). */
export function s3Client(forcePathStyle: boolean): S3Client {
  sharedClient ??= new S3Client({ forcePathStyle, requestChecksumCalculation: 'WHEN_REQUIRED' });
  return sharedClient;
}

/** Large answers in an S3 bucket, streamed with multipart upload. */
export function createS3LargeObjectStore(bucket: string, client: S3Client): LargeObjectStore {
  return {
    startUpload(key, contentType, contentDisposition): LargeObjectUpload {
      const body = new PassThrough();
      const upload = new Upload({
        client,
        params: {
          Bucket: bucket,
          Key: key,
          Body: body,
          ContentType: contentType,
          ContentDisposition: contentDisposition,
        },
        queueSize: 1,
        partSize: 5 * 1024 * 1024,
        leavePartsOnError: false,
      });
      let failure: unknown;
      const done = upload.done().catch((error: unknown) => {
        failure = storageUnavailable(error);
        body.destroy();
        throw failure;
      });
      done.catch(() => undefined);
      return {
        async write(chunk) {
          if (failure) throw failure;
          if (!body.write(chunk)) await Promise.race([once(body, 'drain'), done]);
          if (failure) throw failure;
        },
        async complete() {
          body.end();
          await done;
        },
        async abort() {
          await upload.abort().catch(() => undefined);
          body.destroy();
        },
      };
    },
    presignGet(key, expiresSeconds) {
      return getSignedUrl(client, new GetObjectCommand({ Bucket: bucket, Key: key }), {
        expiresIn: expiresSeconds,
      });
    },
  };
}
