import { createOnDemandS3LargeObjectStore } from '../adapters/s3/on-demand.js';
import { getSettings } from '../config/settings.js';
import type { Answer, AnswerLimits, LargeObjectStore } from '../core/answers.js';
import { type HttpResponse, MAX_RESPONSE_BODY_BYTES } from './http.js';

/**
 * Answers too large for a Lambda response, for every API that has them (Data API reads, getFile,
 * the Web API): the S3 bucket `LARGE_RESULT_BUCKET`, the limits, and the 303 to a presigned URL.
 */

let store: { bucket: string; store: LargeObjectStore } | undefined;

/** The large-answer store of this process; it loads the AWS SDK only when an answer goes to S3. */
function largeAnswerStore(): LargeObjectStore | undefined {
  const settings = getSettings();
  if (!settings.largeResultBucket) return undefined;
  if (store?.bucket !== settings.largeResultBucket) {
    const bucket = settings.largeResultBucket;
    store = { bucket, store: createOnDemandS3LargeObjectStore(bucket, settings.s3ForcePathStyle) };
  }
  return store.store;
}

/** The limits of an inline answer, and where a larger one goes: objects under `keyPrefix` in S3. */
export function largeAnswerLimits(keyPrefix: string): AnswerLimits {
  const settings = getSettings();
  return {
    inlineLimitBytes: settings.inlineLimitBytes,
    // The answer travels escaped inside the Lambda response (a quote counts twice).
    inlineEncodedLimitBytes: MAX_RESPONSE_BODY_BYTES,
    presignSeconds: settings.presignSeconds,
    store: largeAnswerStore(),
    keyPrefix,
  };
}

/**
 * An answer as HTTP: 200 with the body, or 303 See Other to the presigned URL of the stored one.
 * `headers` go on both (the 303 keeps the content type the route would have answered with).
 */
export function answerResponse(answer: Answer, headers: Record<string, string> = {}): HttpResponse {
  if (answer.kind === 'redirect') {
    return {
      status: 303,
      // The presigned URL expires: never reuse this answer.
      headers: { ...headers, location: answer.location, 'cache-control': 'no-store' },
      body: '',
    };
  }
  return { status: 200, headers: { ...headers, 'content-type': answer.contentType }, body: answer.body };
}

/** A fresh presigned GET URL for a stored answer (a recorded answer replayed, CONTRACT 5a). */
export async function presignStoredAnswer(key: string): Promise<string> {
  const store = largeAnswerStore();
  if (!store) throw new Error('A recorded answer is in the large-answer bucket, and none is configured');
  return store.presignGet(key, getSettings().presignSeconds);
}
