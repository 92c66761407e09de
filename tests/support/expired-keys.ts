import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import type { Database } from '../../shared/core/database.js';
import { type ExpiredKeyStore, removeExpiredKeys } from '../../shared/core/idempotency-retention.js';
import type { LogFields } from '../../shared/core/log.js';
import { changeRetentionHandler } from '../../shared/lambda/change-feed.js';
import { sqlOn } from './demo.js';

/**
 * Exactly once's retention (CONTRACT 5a) on a database: keys' records written as the service
 * writes them, some past their time, and the clean-up that removes those. The same checks for
 * every database (embedded, T-SQL).
 */

/** A key's digest of this run (the suites may run again on the same database). */
const digestOf = (label: string) =>
  createHash('sha256').update(`expired-keys ${label} ${Date.now()} ${Math.random()}`).digest('hex');

/**
 * Records `count` keys of `tenant` that expire `hours` from now (negative: expired that long ago),
 * as SVC_IDEMPOTENCY holds them; their digests. Days apart from now, whatever the clocks' zones.
 */
export async function recordKeys(
  db: Database,
  tenant: string,
  count: number,
  hours: number,
): Promise<string[]> {
  const sql = sqlOn(db);
  const digests = Array.from({ length: count }, (_, i) => digestOf(`${tenant} ${hours} ${i}`));
  const expires = new Date(Date.now() + hours * 3_600_000);
  for (const digest of digests) {
    await sql`INSERT INTO dbo."SVC_IDEMPOTENCY" ("KEY_DIGEST", "TENANT", "FINGERPRINT", "HTTP_STATUS", "CONTENT_TYPE", "BODY", "EXPIRES_AT")
      VALUES (${digest}, ${tenant}, ${digest}, ${200}, ${'application/json'}, ${Buffer.from('{"id":1}')}, ${expires})`;
  }
  return digests;
}

/** Which of `digests` are still recorded. */
export async function stillRecorded(db: Database, digests: readonly string[]): Promise<string[]> {
  const left: string[] = [];
  for (const digest of digests) {
    const rows = await sqlOn(
      db,
    )`SELECT "KEY_DIGEST" AS digest FROM dbo."SVC_IDEMPOTENCY" WHERE "KEY_DIGEST" = ${digest}`;
    if (rows.length > 0) left.push(digest);
  }
  return left;
}

/**
 * The store removes expired records only, in batches of the size asked, until one comes back short;
 * with its time budget spent after a full batch, it stops and says more are left.
 */
export async function checkExpiredKeysRemoved(db: Database, store: ExpiredKeyStore): Promise<void> {
  const expired = await recordKeys(db, 'demo', 7, -48);
  const live = await recordKeys(db, 'demo', 2, 48);
  // (Other suites' expired keys may be there too: at least this run's.)
  const first = await removeExpiredKeys(store, { batch: 3, budgetMs: 0 });
  expect(first).toEqual({ removed: 3, more: true });
  expect((await stillRecorded(db, expired)).length).toBe(4);
  const rest = await removeExpiredKeys(store, { batch: 3 });
  expect(rest).toMatchObject({ more: false });
  expect((rest as { removed: number }).removed).toBeGreaterThanOrEqual(4);
  expect(await stillRecorded(db, expired)).toEqual([]);
  expect(await stillRecorded(db, live)).toEqual(live);
  expect(await store.removeExpired(1000)).toBe(0);
}

/** A log that keeps what it is given, for {@link checkRetentionRun}. */
export type KeptLog = { message: string; fields: LogFields }[];

/**
 * The scheduled clean-up (`changeFeedRetention`) with a registry of tenants `shared` on `db` and
 * tenant `unscripted` on a database without the keys' table: each database once, the expired keys
 * of both tenants of `db` removed and the others kept, the database without the table logged once
 * and passed over, and the run answered without a failure.
 */
export async function checkRetentionRun(
  db: Database,
  logged: KeptLog,
  tenants: { readonly shared: readonly [string, string]; readonly unscripted: string },
): Promise<void> {
  const [first, second] = tenants.shared;
  const expired = [...(await recordKeys(db, first, 2, -30)), ...(await recordKeys(db, second, 1, -30))];
  const live = [...(await recordKeys(db, first, 1, 30)), ...(await recordKeys(db, second, 1, 30))];
  const from = logged.length;
  const run = await changeRetentionHandler()();
  expect(run).toMatchObject({ failed: 0 });
  expect(run.keysRemoved).toBeGreaterThanOrEqual(3);
  expect(await stillRecorded(db, expired)).toEqual([]);
  expect(await stillRecorded(db, live)).toEqual(live);
  const lines = logged.slice(from).filter((line) => line.message.startsWith('idempotency retention'));
  // One line per database, in the registry's order of its tenants.
  expect(lines.map((line) => [line.message, line.fields.tenants])).toHaveLength(2);
  expect(lines.map((line) => [line.message, line.fields.tenants])).toEqual(
    expect.arrayContaining([
      ['idempotency retention', [first, second]],
      [
        'idempotency retention: the database has no dbo.SVC_IDEMPOTENCY (run npm run db:apply on it)',
        [tenants.unscripted],
      ],
    ]),
  );
}
