import { createEmbeddedChangeFeedStore } from '../adapters/embedded/change-feed-store.js';
import { createMssqlChangeFeedStore } from '../adapters/mssql/change-feed-store.js';
import { byDialect, openDatabase } from '../config/databases.js';
import { hasQueue } from '../config/queues.js';
import { loadTenantRegistry } from '../config/tenant-registry.js';
import { type ChangeFeedStore, removeExpiredChanges } from '../core/data-api/changes.js';
import { cancelledBy, type Database, type DataSourceInfo } from '../core/database.js';
import { describeError } from '../core/log.js';
import { removeExpiredKeysOfDatabases } from './idempotency-retention.js';
import { logFormatFromEnv, reportPermissionDenied, serviceLog } from './observability.js';
import type { TenantRequestContext } from './request-context.js';

/** The change feed's store for a database, in its dialect. */
export function changeFeedStore(db: Database): ChangeFeedStore {
  return byDialect(db, { mssql: createMssqlChangeFeedStore, embedded: createEmbeddedChangeFeedStore });
}

/**
 * Whether the tenant's database records a table's changes now (its recording installed): what the
 * description asks before it lists a getChanges path. A store that cannot say (no change feed
 * objects at all, no permission) answers no: the path would not answer either.
 */
export async function changeFeedRecording(
  ctx: TenantRequestContext,
): Promise<(source: DataSourceInfo) => Promise<boolean>> {
  const { tenant } = ctx;
  if (tenant.changeFeed.length === 0) return async () => false;
  const store = changeFeedStore(cancelledBy(await openDatabase(tenant.database, ctx.trace), ctx.signal));
  return async (source) => (await store.state(source).catch(() => undefined)) !== undefined;
}

/** What a run of the scheduled clean-up did. */
export interface RetentionRun {
  /** Tenants whose recorded tables were cleaned. */
  readonly tenants: number;
  /** Tenants and databases whose clean-up failed (each logged as an error). */
  readonly failed: number;
  /** Recorded changes removed. */
  readonly removed: number;
  /** Exactly once's expired keys removed (CONTRACT 5a), of every tenant's database. */
  readonly keysRemoved: number;
}

/**
 * The scheduled retention clean-up (serverless.yml `changeFeedRetention`; the local stack runs
 * the same every hour): every tenant's recorded tables, one log line per tenant, then exactly
 * once's expired keys of every tenant's database, once per database. A tenant or database that
 * fails is logged as an error (the function's alarms see it) and the others go on.
 */
export function changeRetentionHandler(options: { now?: () => number } = {}) {
  logFormatFromEnv();
  return async function changeFeedRetention(): Promise<RetentionRun> {
    const registry = await loadTenantRegistry(serviceLog());
    let failed = 0;
    let removed = 0;
    let tenants = 0;
    // Each database with the tenants it serves (openDatabase gives one per connection): tenants
    // may share one, and so its keys' table.
    const databases = new Map<Database, string[]>();
    for (const id of registry.ids()) {
      const tenant = registry.get(id);
      if (!tenant) continue;
      let db: Database;
      try {
        db = await openDatabase(tenant.database);
      } catch (error) {
        failed++;
        serviceLog().error('retention clean-up: the database could not be opened', {
          tenant: id,
          ...describeError(error),
        });
        continue;
      }
      databases.set(db, [...(databases.get(db) ?? []), id]);
      // setFile's keys are recorded where its files commit: a document database of its own too.
      if (tenant.documentDatabase) {
        try {
          const documents = await openDatabase(tenant.documentDatabase);
          if (documents !== db) databases.set(documents, [...(databases.get(documents) ?? []), id]);
        } catch (error) {
          failed++;
          serviceLog().error('retention clean-up: the document database could not be opened', {
            tenant: id,
            ...describeError(error),
          });
        }
      }
      if (tenant.changeFeed.length === 0) continue;
      tenants++;
      try {
        const outcomes = await removeExpiredChanges(
          db,
          changeFeedStore(db),
          tenant.changeFeed,
          tenant.changeRetentionDays,
          (options.now ?? Date.now)(),
        );
        removed += outcomes.reduce((sum, o) => sum + (o.removed ?? 0), 0);
        const problems = outcomes.filter((o) => o.problem);
        const fields: Record<string, unknown> = { tenant: id, outcomes };
        // The notifier's backstop, on the connection this run has open anyway (CONTRACT 4c).
        if (hasQueue('notifierPasses')) {
          try {
            // Imported here: the functions that share this module for its store (getChanges, the description) never need it.
            const [{ restartStalledNotifier }, { notificationQueue, subscriptionStore }] = await Promise.all([
              import('../core/notifications/notifier.js'),
              import('./notifications.js'),
            ]);
            fields.notifierRestarted = await restartStalledNotifier({
              tenant: id,
              store: subscriptionStore(db, id),
              queue: notificationQueue(),
              delayMs: tenant.changeNotificationDelaySeconds * 1000,
              now: options.now,
            });
          } catch (error) {
            reportPermissionDenied(error, { tenant: id });
            serviceLog().warn('change notifier: could not check its loop', {
              tenant: id,
              ...describeError(error),
            });
          }
        }
        if (problems.length > 0) serviceLog().warn('change retention: some tables were not cleaned', fields);
        else serviceLog().info('change retention', fields);
      } catch (error) {
        failed++;
        reportPermissionDenied(error, { tenant: id });
        serviceLog().error('change retention failed', { tenant: id, ...describeError(error) });
      }
    }
    const keys = await removeExpiredKeysOfDatabases(databases, options.now);
    failed += keys.failed;
    // A failure fails the invocation, so that the function's error alarm sees it.
    if (failed > 0)
      throw new Error(`retention clean-up failed for ${failed} tenant(s) or database(s); see the log`);
    return { tenants, failed, removed, keysRemoved: keys.removed };
  };
}
