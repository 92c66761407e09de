import { expect } from 'vitest';
import type { RestoredFeedCase } from './change-feed-model.js';

/**
 * What `restoredFeedCase` (change-feed-model.ts) must come to on every database: each token taken after the
 * backup refused 410 with words that say why and what to do, the backup's own token reading on
 * (the write after the restore), and a sync from scratch equal to getData.
 */
export function expectRestoredFeedRefused(seen: RestoredFeedCase): void {
  for (const answer of Object.values(seen.after)) {
    expect(answer.outcome).toBe('410 sync_token_expired');
    expect(answer.message).toBe(
      'This sync token has expired (the change feed is behind it: the database was restored from a backup or reset since): start again without a token, which reads every row again, and replace your copy with what it answers',
    );
  }
  expect(seen.atBackup).toHaveLength(1);
  expect(seen.freshCopyEqual).toBe(true);
}
