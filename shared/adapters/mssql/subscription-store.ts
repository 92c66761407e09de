/**
 * Change notifications' store in T-SQL (infra/sql/mssql/service/080-change-notifications.sql). Times
 * are typed as their columns (compared as text they would not order); a statement that must say
 * how many rows it changed selects @@ROWCOUNT, not an OUTPUT clause (the T-SQL engine returns no
 * OUTPUT rows on a session with NOCOUNT ON).
 */
import type { Database } from '../../core/database.js';
import type { SubscriptionStore } from '../../core/notifications/subscriptions.js';
import { createSqlSubscriptionStore, type SubscriptionStatements } from '../sql-common/subscription-store.js';
import { mssqlAttemptInsert } from './attempt-log.js';

const COLUMNS = `[ID] AS [id], [OWNER] AS [owner], [SOURCE_SCHEMA] AS [sourceSchema],
  [SOURCE_NAME] AS [sourceName], [URL] AS [url], [SECRET] AS [secret],
  [PREVIOUS_SECRET] AS [previousSecret], [SECRET_CHANGED_AT] AS [secretChangedAt],
  [STATE] AS [state], [CREATED_AT] AS [createdAt], [SEEN_FEED] AS [seenFeed],
  [SEEN_BATCH] AS [seenBatch], [NOTIFIED_BATCH] AS [notifiedBatch],
  [LAST_CHANGE_AT] AS [lastChangeAt], [LAST_NOTIFIED_AT] AS [lastNotifiedAt],
  [LAST_DELIVERED_AT] AS [lastDeliveredAt], [CONSECUTIVE_FAILURES] AS [consecutiveFailures],
  [FAILING_SINCE] AS [failingSince], [DISABLED_AT] AS [disabledAt],
  [DISABLED_REASON] AS [disabledReason], [WAITING_EVENT] AS [waitingEvent],
  [WAITING_SINCE] AS [waitingSince], [SLOW_SINCE] AS [slowSince]`;
// A failure disables when told to (410) or when failing since the cut-off or before.
const DISABLES =
  '(@p6 = 1 OR COALESCE([FAILING_SINCE], CAST(@p3 AS datetime2(3))) <= CAST(@p4 AS datetime2(3)))';

export const MSSQL_SUBSCRIPTION_STATEMENTS: SubscriptionStatements = {
  lockNotifier: [
    `BEGIN TRY INSERT INTO [dbo].[SVC_NOTIFIER_STATE] ([TENANT], [LAST_PASS_AT]) SELECT @p1, NULL WHERE NOT EXISTS (SELECT 1 FROM [dbo].[SVC_NOTIFIER_STATE] WHERE [TENANT] = @p1); END TRY BEGIN CATCH IF ERROR_NUMBER() NOT IN (2627, 2601) THROW; END CATCH`,
    `UPDATE [dbo].[SVC_NOTIFIER_STATE] SET [TENANT] = [TENANT] WHERE [TENANT] = @p1`,
  ],
  count: `SELECT COUNT(*) AS [n] FROM [dbo].[SVC_SUBSCRIPTION] WHERE [TENANT] = @p1`,
  insert: `INSERT INTO [dbo].[SVC_SUBSCRIPTION] ([ID], [OWNER], [SOURCE_SCHEMA], [SOURCE_NAME], [URL],
    [SECRET], [STATE], [CREATED_AT], [SEEN_FEED], [SEEN_BATCH], [NOTIFIED_BATCH],
    [CONSECUTIVE_FAILURES], [WAITING_EVENT], [WAITING_SINCE], [TENANT])
    VALUES (@p1, @p2, @p3, @p4, @p5, @p6, 'pending', CAST(@p7 AS datetime2(3)), @p8, @p9, @p9, 0,
    @p10, CAST(@p7 AS datetime2(3)), @p11)`,
  lastPassAt: `SELECT [LAST_PASS_AT] AS [lastPassAt] FROM [dbo].[SVC_NOTIFIER_STATE] WHERE [TENANT] = @p1`,
  list: `SELECT ${COLUMNS} FROM [dbo].[SVC_SUBSCRIPTION] WHERE [TENANT] = @p2 AND [OWNER] = @p1 ORDER BY [CREATED_AT], [ID]`,
  get: `SELECT ${COLUMNS} FROM [dbo].[SVC_SUBSCRIPTION] WHERE [ID] = @p1 AND [TENANT] = @p2`,
  getOwned: `SELECT ${COLUMNS} FROM [dbo].[SVC_SUBSCRIPTION] WHERE [ID] = @p1 AND [OWNER] = @p2 AND [TENANT] = @p3`,
  listLive: `SELECT ${COLUMNS} FROM [dbo].[SVC_SUBSCRIPTION] WHERE [TENANT] = @p1 AND [STATE] <> 'disabled'`,
  remove: `DELETE FROM [dbo].[SVC_SUBSCRIPTION] WHERE [ID] = @p1 AND [OWNER] = @p2 AND [TENANT] = @p3;
    SELECT @@ROWCOUNT AS [changed];`,
  rotate: `UPDATE [dbo].[SVC_SUBSCRIPTION] SET [PREVIOUS_SECRET] = [SECRET], [SECRET] = @p3,
    [SECRET_CHANGED_AT] = CAST(@p4 AS datetime2(3)) WHERE [ID] = @p1 AND [OWNER] = @p2 AND [TENANT] = @p5`,
  enable: `UPDATE [dbo].[SVC_SUBSCRIPTION] SET [STATE] = 'pending', [DISABLED_AT] = NULL, [DISABLED_REASON] = NULL,
    [FAILING_SINCE] = NULL, [CONSECUTIVE_FAILURES] = 0, [WAITING_EVENT] = @p3,
    [WAITING_SINCE] = CAST(@p4 AS datetime2(3))
    WHERE [ID] = @p1 AND [OWNER] = @p2 AND [TENANT] = @p5
    AND ([STATE] = 'disabled' OR ([STATE] = 'pending' AND [WAITING_EVENT] IS NULL))`,
  claimPass: `UPDATE [dbo].[SVC_NOTIFIER_STATE] SET [LAST_PASS_AT] = CAST(@p2 AS datetime2(3))
    WHERE [TENANT] = @p1 AND ([LAST_PASS_AT] IS NULL OR [LAST_PASS_AT] <= CAST(@p3 AS datetime2(3)));
    SELECT @@ROWCOUNT AS [changed];`,
  liveCount: `SELECT COUNT(*) AS [n] FROM [dbo].[SVC_SUBSCRIPTION] WHERE [TENANT] = @p1 AND [STATE] <> 'disabled'`,
  endPasses: `UPDATE [dbo].[SVC_NOTIFIER_STATE] SET [LAST_PASS_AT] = NULL WHERE [TENANT] = @p1`,
  observe: `UPDATE [dbo].[SVC_SUBSCRIPTION] SET
    [NOTIFIED_BATCH] = CASE WHEN [SEEN_FEED] = @p3 THEN [NOTIFIED_BATCH] ELSE -1 END,
    [SEEN_FEED] = @p3, [SEEN_BATCH] = @p4, [LAST_CHANGE_AT] = CAST(@p5 AS datetime2(3))
    WHERE [TENANT] = @p6 AND [SOURCE_SCHEMA] = @p1 AND [SOURCE_NAME] = @p2
    AND ([SEEN_FEED] IS NULL OR [SEEN_FEED] <> @p3 OR [SEEN_BATCH] < @p4)`,
  claim: `UPDATE [dbo].[SVC_SUBSCRIPTION] SET [WAITING_EVENT] = @p2, [WAITING_SINCE] = CAST(@p4 AS datetime2(3)),
    [NOTIFIED_BATCH] = @p3, [LAST_NOTIFIED_AT] = CAST(@p4 AS datetime2(3))
    WHERE [ID] = @p1 AND [TENANT] = @p6 AND [STATE] = 'active' AND [NOTIFIED_BATCH] < @p3
    AND ([WAITING_EVENT] IS NULL OR [WAITING_SINCE] < CAST(@p5 AS datetime2(3)));
    SELECT @@ROWCOUNT AS [changed];`,
  release: `UPDATE [dbo].[SVC_SUBSCRIPTION] SET [WAITING_EVENT] = NULL, [WAITING_SINCE] = NULL, [NOTIFIED_BATCH] = -1
    WHERE [ID] = @p1 AND [WAITING_EVENT] = @p2 AND [TENANT] = @p3`,
  forceClaim: `UPDATE [dbo].[SVC_SUBSCRIPTION] SET [WAITING_EVENT] = @p2, [WAITING_SINCE] = CAST(@p3 AS datetime2(3)),
    [LAST_NOTIFIED_AT] = CAST(@p3 AS datetime2(3))
    WHERE [ID] = @p1 AND [TENANT] = @p4 AND [STATE] = 'active';
    SELECT @@ROWCOUNT AS [changed];`,
  failedSince: `SELECT DISTINCT [SUBSCRIPTION_ID] AS [id] FROM [dbo].[SVC_NOTIFICATION_DELIVERY]
    WHERE [TENANT] = @p2 AND [ATTEMPTED_AT] >= CAST(@p1 AS datetime2(3)) AND [OUTCOME] IN ('failed', 'gone', 'refused')`,
  attemptsMade: `SELECT COUNT(*) AS [n] FROM [dbo].[SVC_NOTIFICATION_DELIVERY]
    WHERE [MESSAGE_ID] = @p1 AND [TENANT] = @p2 AND [OUTCOME] IN ('retrying', 'failed')`,
  record: mssqlAttemptInsert('SVC_NOTIFICATION_DELIVERY', ['SUBSCRIPTION_ID', 'EVENT_ID', 'EVENT_TYPE']),
  delivered: `UPDATE [dbo].[SVC_SUBSCRIPTION] SET [LAST_DELIVERED_AT] = CAST(@p4 AS datetime2(3)), [CONSECUTIVE_FAILURES] = 0,
    [FAILING_SINCE] = NULL,
    [SLOW_SINCE] = CASE WHEN @p5 IS NULL THEN NULL ELSE COALESCE([SLOW_SINCE], CAST(@p5 AS datetime2(3))) END,
    [STATE] = CASE WHEN [STATE] = 'pending' AND @p3 = 1 THEN 'active' ELSE [STATE] END,
    [WAITING_SINCE] = CASE WHEN [WAITING_EVENT] = @p2 THEN NULL ELSE [WAITING_SINCE] END,
    [WAITING_EVENT] = CASE WHEN [WAITING_EVENT] = @p2 THEN NULL ELSE [WAITING_EVENT] END
    WHERE [ID] = @p1 AND [TENANT] = @p6 AND [STATE] <> 'disabled'`,
  markSlow: `UPDATE [dbo].[SVC_SUBSCRIPTION] SET [SLOW_SINCE] = CAST(@p2 AS datetime2(3))
    WHERE [ID] = @p1 AND [TENANT] = @p3 AND [SLOW_SINCE] IS NULL`,
  failed: `UPDATE [dbo].[SVC_SUBSCRIPTION] SET [CONSECUTIVE_FAILURES] = [CONSECUTIVE_FAILURES] + 1,
    [FAILING_SINCE] = COALESCE([FAILING_SINCE], CAST(@p3 AS datetime2(3))),
    [STATE] = CASE WHEN ${DISABLES} THEN 'disabled' ELSE [STATE] END,
    [DISABLED_AT] = CASE WHEN ${DISABLES} THEN CAST(@p3 AS datetime2(3)) ELSE [DISABLED_AT] END,
    [DISABLED_REASON] = CASE WHEN ${DISABLES} THEN @p7 ELSE [DISABLED_REASON] END,
    [WAITING_SINCE] = CASE WHEN [WAITING_EVENT] = @p2 AND (@p5 = 1 OR ${DISABLES})
    THEN NULL ELSE [WAITING_SINCE] END,
    [WAITING_EVENT] = CASE WHEN [WAITING_EVENT] = @p2 AND (@p5 = 1 OR ${DISABLES})
    THEN NULL ELSE [WAITING_EVENT] END
    WHERE [ID] = @p1 AND [TENANT] = @p8 AND [STATE] <> 'disabled';
    SELECT @@ROWCOUNT AS [changed];`,
  disabledAt: `SELECT [DISABLED_AT] AS [disabledAt] FROM [dbo].[SVC_SUBSCRIPTION] WHERE [ID] = @p1 AND [TENANT] = @p2`,
};

/** The subscriptions of one tenant in a SQL Server tenant database. */
export function createMssqlSubscriptionStore(
  db: Pick<Database, 'query' | 'transaction'>,
  tenant: string,
): SubscriptionStore {
  return createSqlSubscriptionStore(db, MSSQL_SUBSCRIPTION_STATEMENTS, tenant);
}
