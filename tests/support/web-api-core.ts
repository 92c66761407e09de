/** Helpers of the unit tests of the Web API core (shared/core/web-api). */
import type { Row } from '../../shared/core/database.js';
import type { WebApiError } from '../../shared/core/web-api/envelope.js';
import type { Operation } from '../../shared/core/web-api/store.js';

/** An operation of the memory Web API store whose every run throws what `error` makes. */
export const failingOperation = (
  vltyp: number,
  procedure: string,
  rowName: string,
  error: () => Error,
): Operation & { run: () => Promise<Row[]> } => ({
  vltyp,
  procedure,
  rowName,
  run: async () => {
    throw error();
  },
});

/** The error a call is refused with; fails when the call is accepted. */
export async function refusal(promise: Promise<unknown>): Promise<WebApiError> {
  try {
    await promise;
  } catch (error) {
    return error as WebApiError;
  }
  throw new Error('the call was accepted');
}

/** The demo tenant's Web API policy (infra/local/tenants.json) as the use cases take it. */
export const demoPolicy = {
  requestMaxSecValidity: 300,
  checkReplayRequest: true,
  replayRequestTime: 300,
  commandTimeoutAsyncSeconds: 20,
  jobStaleSeconds: 1800,
  syncTimeLimitSeconds: 25,
} as const;
