import { expect } from 'vitest';
import type { JournalOutcome, WebApiStore } from '../../shared/core/web-api/store.js';

const outcomeOf = (worker: string): JournalOutcome => ({
  state: 'finished',
  answer: JSON.stringify({ worker }),
  vlResult: 1,
  rowName: 'Sleep',
});

/**
 * A slow worker and its successor (issue 19): the first attempt's lease lapses, a second attempt
 * takes the job; the slow worker can then neither release the successor's lease nor finish the
 * row, and the successor finishes it once. The same check for every store (embedded, SQL Server).
 */
export async function checkJobLeaseFencing(store: WebApiStore): Promise<void> {
  const id = await store.openJournal({
    applicationId: 1,
    vltyp: 9001,
    mode: 'async',
    request: '{"vltyp":9001,"params":[{"seconds":0}]}',
    requestId: `lease-${Date.now()}`,
  });
  expect(await store.startAttempt(id, 1, 3)).toMatchObject({ id, attempts: 1 });
  // The first worker's lease lapses while it is still busy.
  await new Promise((resolve) => setTimeout(resolve, 1_200));
  expect(await store.startAttempt(id, 60, 3)).toMatchObject({ id, attempts: 2 });
  // The slow worker gives up or finishes late: neither touches the successor's job.
  await store.releaseJob(id, 1);
  expect(await store.readJournal(id)).toMatchObject({ state: 'running', attempts: 2, leaseHeld: true });
  expect(await store.finishAttempt(id, 1, outcomeOf('slow'))).toBe(false);
  expect(await store.readJournal(id)).toMatchObject({ state: 'running', answer: undefined });
  // The lease holder finishes it, once.
  expect(await store.finishAttempt(id, 2, outcomeOf('successor'))).toBe(true);
  expect(await store.finishAttempt(id, 2, outcomeOf('successor'))).toBe(false);
  const finished = await store.readJournal(id);
  expect(finished).toMatchObject({ state: 'finished', attempts: 2, leaseHeld: false });
  expect(JSON.parse(finished!.answer!)).toEqual({ worker: 'successor' });
  // A released lease of the latest attempt lets the next delivery start at once (the usual path).
  const next = await store.openJournal({
    applicationId: 1,
    vltyp: 9001,
    mode: 'async',
    request: '{}',
    requestId: `lease-${Date.now()}`,
  });
  expect(await store.startAttempt(next, 60, 3)).toMatchObject({ attempts: 1 });
  await store.releaseJob(next, 1);
  expect(await store.startAttempt(next, 60, 3)).toMatchObject({ attempts: 2 });
}
