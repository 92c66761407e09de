import type { LargeObjectStore } from '../../core/answers.js';

/**
 * The S3 large-object store, with the AWS SDK (S3 client, multipart upload, presigner) imported at
 * its first use: a cold start does not parse it, and answers small enough to go inline never load it.
 */
export function createOnDemandS3LargeObjectStore(bucket: string, forcePathStyle: boolean): LargeObjectStore {
  let loaded: Promise<LargeObjectStore> | undefined;
  const store = () =>
    (loaded ??= import('./index.js').then(({ createS3LargeObjectStore, s3Client }) =>
      createS3LargeObjectStore(bucket, s3Client(forcePathStyle)),
    ));
  return {
    startUpload(key, contentType, contentDisposition) {
      const upload = store().then((s3) => s3.startUpload(key, contentType, contentDisposition));
      // Its failure reaches the caller through write/complete/abort; not an unhandled rejection.
      upload.catch(() => undefined);
      return {
        write: async (chunk) => (await upload).write(chunk),
        complete: async () => (await upload).complete(),
        abort: async () => (await upload).abort(),
      };
    },
    presignGet: async (key, expiresSeconds) => (await store()).presignGet(key, expiresSeconds),
  };
}
