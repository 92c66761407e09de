/** Change notifications' store in T-SQL (infra/sql/mssql/service/080-change-notifications.sql). */
import type { Database } from '../../core/database.js';
import type { SubscriptionStore } from '../../core/notifications/subscriptions.js';
import { createSqlSubscriptionStore, subscriptionStatements } from '../sql-common/subscription-store.js';
import { mssqlDialect } from './dialect.js';

export const MSSQL_SUBSCRIPTION_STATEMENTS = subscriptionStatements({
  q: mssqlDialect.quoteIdent,
  p: (index) => `@p${index}`,
  time: (index) => `CAST(@p${index} AS datetime2(3))`,
  // @@ROWCOUNT, not an OUTPUT clause: the T-SQL engine returns no OUTPUT rows on a session with NOCOUNT ON.
  readTime: (column) => column,
  counted: (statement) => `${statement};\n    SELECT @@ROWCOUNT AS [changed];`,
  // The row made by the first of two at once; the other finds the key taken (2627, 2601).
  lockNotifier: [
    `BEGIN TRY
      INSERT INTO [dbo].[SVC_NOTIFIER_STATE] ([TENANT], [LAST_PASS_AT])
      SELECT @p1, NULL WHERE NOT EXISTS (SELECT 1 FROM [dbo].[SVC_NOTIFIER_STATE] WHERE [TENANT] = @p1);
    END TRY
    BEGIN CATCH
      IF ERROR_NUMBER() NOT IN (2627, 2601) THROW;
    END CATCH`,
    'UPDATE [dbo].[SVC_NOTIFIER_STATE] SET [TENANT] = [TENANT] WHERE [TENANT] = @p1',
  ],
});

/** The subscriptions of a SQL Server tenant database. */
export function createMssqlSubscriptionStore(db: Pick<Database, 'query' | 'transaction'>): SubscriptionStore {
  return createSqlSubscriptionStore(db, MSSQL_SUBSCRIPTION_STATEMENTS);
}
