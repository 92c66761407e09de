/** The webhook admin's statements (infra/sql/mssql/service/040-webhook.sql) in T-SQL. */
import type { Database } from '../../core/database.js';
import type { WebhookAdminStore } from '../../core/webhook/admin.js';
import {
  createSqlWebhookAdminStore,
  type WebhookAdminStatements,
} from '../sql-common/webhook-admin-store.js';

export const MSSQL_WEBHOOK_ADMIN_STATEMENTS: WebhookAdminStatements = {
  findEvent: `SELECT TOP (1) [SUBJECT_ID] AS [subjectId], [DOCUMENT_ID] AS [documentId]
    FROM [dbo].[WEBHOOK_DELIVERY] WHERE [EVENT_ID] = @p1 AND [TENANT] = @p2 ORDER BY [ID] DESC`,
  eventsToRecover: `SELECT TOP (@p3) [EVENT_ID] AS [eventId], [SUBJECT_ID] AS [subjectId],
      [DOCUMENT_ID] AS [documentId], [OUTCOME] AS [lastOutcome], [ATTEMPTED_AT] AS [lastAttemptAt],
      [ID] AS [rowId]
    FROM (
      SELECT [EVENT_ID], [SUBJECT_ID], [DOCUMENT_ID], [OUTCOME], [ATTEMPTED_AT], [ID],
        ROW_NUMBER() OVER (PARTITION BY [EVENT_ID] ORDER BY [ID] DESC) AS [newest]
      FROM [dbo].[WEBHOOK_DELIVERY]
      WHERE [ATTEMPTED_AT] >= CAST(@p1 AS datetime2(3)) AND [TENANT] = @p4 AND (@p2 = 0 OR [SUBJECT_ID] = @p2)
    ) AS [last]
    WHERE [newest] = 1 AND [OUTCOME] IN ('failed', 'disabled')
    ORDER BY [ID]`,
  subjectState: `SELECT [s].[WEBHOOK_URL] AS [webhookUrl], [e].[SUBJECT_ID] AS [endpointSubjectId],
      [e].[DISABLED_AT] AS [disabledAt], [e].[ENABLED_AT] AS [enabledAt],
      [e].[FAILING_SINCE] AS [failingSince], [e].[SECRET_CHANGED_AT] AS [secretChangedAt]
    FROM [dbo].[SUBJECT] AS [s]
    LEFT JOIN [dbo].[WEBHOOK_ENDPOINT] AS [e] ON [e].[TENANT] = @p2 AND [e].[SUBJECT_ID] = [s].[ID]
    WHERE [s].[ID] = @p1`,
  lastAttempts: `SELECT TOP (@p2) [EVENT_ID] AS [eventId], [DOCUMENT_ID] AS [documentId],
      [ATTEMPT] AS [attempt], [ATTEMPTED_AT] AS [attemptedAt], [OUTCOME] AS [outcome],
      [HTTP_STATUS] AS [httpStatus], [ERROR] AS [error], [DURATION_MS] AS [durationMs]
    FROM [dbo].[WEBHOOK_DELIVERY] WHERE [SUBJECT_ID] = @p1 AND [TENANT] = @p3 ORDER BY [ID] DESC`,
  claimRecovery: `INSERT INTO [dbo].[WEBHOOK_DELIVERY] ([EVENT_ID], [SUBJECT_ID], [DOCUMENT_ID], [ATTEMPT],
      [ATTEMPTED_AT], [OUTCOME], [RECOVERS_ID], [MESSAGE_ID], [TENANT])
    SELECT @p1, @p2, @p3, 0, CAST(@p5 AS datetime2(3)), 'requeued', @p4, @p6, @p7
    WHERE NOT EXISTS (SELECT 1 FROM [dbo].[WEBHOOK_DELIVERY] WHERE [RECOVERS_ID] = @p4)`,
  recoveryClaimed: `SELECT [MESSAGE_ID] AS [claimedBy] FROM [dbo].[WEBHOOK_DELIVERY]
    WHERE [RECOVERS_ID] = @p1 AND [TENANT] = @p2`,
  enable: `UPDATE [dbo].[WEBHOOK_ENDPOINT] SET [FAILING_SINCE] = NULL,
      [ENABLED_AT] = CASE WHEN [DISABLED_AT] IS NULL THEN [ENABLED_AT] ELSE @p2 END, [DISABLED_AT] = NULL
    WHERE [SUBJECT_ID] = @p1 AND [TENANT] = @p3`,
};

/** A tenant's webhook admin store on its SQL Server database. */
export function createMssqlWebhookAdminStore(db: Pick<Database, 'query'>, tenant: string): WebhookAdminStore {
  return createSqlWebhookAdminStore(db, MSSQL_WEBHOOK_ADMIN_STATEMENTS, tenant);
}
