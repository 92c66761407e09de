/** The webhook's delivery log (`WEBHOOK_DELIVERY`, `SUBJECT`; infra/sql/mssql/service/040-webhook.sql) in T-SQL. */
import type { Database } from '../../core/database.js';
import type { WebhookDeliveryLog } from '../../core/webhook/delivery-log.js';
import {
  createSqlWebhookDeliveryLog,
  type DeliveryLogStatements,
} from '../sql-common/webhook-delivery-log.js';

export const MSSQL_DELIVERY_LOG_STATEMENTS: DeliveryLogStatements = {
  // One row whether or not the subject exists. The delivered count is served by the unique filtered
  // index on delivered events, the attempts of the message by the index on subject and document
  // (the event id follows from them within a tenant).
  findTarget: `SELECT
      (SELECT COUNT(*) FROM [dbo].[WEBHOOK_DELIVERY]
        WHERE [EVENT_ID] = @p1 AND [OUTCOME] IN ('delivered', 'resent')
          AND (@p5 = 0 OR [MESSAGE_ID] = @p4)) AS [delivered],
      (SELECT COUNT(*) FROM [dbo].[WEBHOOK_DELIVERY]
        WHERE [SUBJECT_ID] = @p2 AND [DOCUMENT_ID] = @p3 AND [EVENT_ID] = @p1 AND [MESSAGE_ID] = @p4
          AND [OUTCOME] IN ('retrying', 'failed')) AS [attemptsMade],
      [s].[ID] AS [subjectId],
      [s].[WEBHOOK_URL] AS [webhookUrl],
      [s].[SECRET_WEBHOOK] AS [secret],
      [e].[SUBJECT_ID] AS [endpointSubjectId],
      [e].[WEBHOOK_URL] AS [endpointUrl],
      [e].[SECRET] AS [endpointSecret],
      [e].[PREVIOUS_SECRET] AS [previousSecret],
      [e].[SECRET_CHANGED_AT] AS [secretChangedAt],
      [e].[FAILING_SINCE] AS [failingSince],
      [e].[DISABLED_AT] AS [disabledAt],
      [e].[ENABLED_AT] AS [enabledAt]
    FROM (SELECT 1 AS [one]) AS [x]
    LEFT JOIN [dbo].[SUBJECT] AS [s] ON [s].[ID] = @p2
    LEFT JOIN [dbo].[WEBHOOK_ENDPOINT] AS [e] ON [e].[SUBJECT_ID] = [s].[ID]`,
  // The first copy of a subject's events to get here makes the row; another that races it finds
  // the key taken (2627) and leaves the row as the first made it.
  insertEndpoint: `BEGIN TRY
      INSERT INTO [dbo].[WEBHOOK_ENDPOINT] ([SUBJECT_ID], [WEBHOOK_URL], [SECRET], [PREVIOUS_SECRET],
        [SECRET_CHANGED_AT], [FAILING_SINCE], [DISABLED_AT], [ENABLED_AT])
      SELECT @p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8
      WHERE NOT EXISTS (SELECT 1 FROM [dbo].[WEBHOOK_ENDPOINT] WHERE [SUBJECT_ID] = @p1);
    END TRY
    BEGIN CATCH
      IF ERROR_NUMBER() NOT IN (2627, 2601) THROW;
    END CATCH`,
  updateEndpoint: `UPDATE [dbo].[WEBHOOK_ENDPOINT] SET [WEBHOOK_URL] = @p2, [SECRET] = @p3,
      [PREVIOUS_SECRET] = @p4, [SECRET_CHANGED_AT] = @p5, [FAILING_SINCE] = @p6, [DISABLED_AT] = @p7,
      [ENABLED_AT] = @p8
    WHERE [SUBJECT_ID] = @p1`,
  endpointDelivered: `UPDATE [dbo].[WEBHOOK_ENDPOINT] SET [FAILING_SINCE] = NULL
    WHERE [SUBJECT_ID] = @p1 AND [FAILING_SINCE] IS NOT NULL`,
  // One statement, so that of failures at once exactly one sees the endpoint enabled and disables it.
  // The times typed as the column is (compared as text they would not order as times). Of failures
  // at once, the one whose second statement changes the row disabled it: @@ROWCOUNT says so (an
  // OUTPUT clause would too, but the T-SQL engine returns none on a session with NOCOUNT ON).
  endpointFailed: `UPDATE [dbo].[WEBHOOK_ENDPOINT] SET [FAILING_SINCE] = CAST(@p2 AS datetime2(3))
    WHERE [SUBJECT_ID] = @p1 AND [DISABLED_AT] IS NULL AND [FAILING_SINCE] IS NULL;
    UPDATE [dbo].[WEBHOOK_ENDPOINT] SET [DISABLED_AT] = CAST(@p2 AS datetime2(3))
    WHERE [SUBJECT_ID] = @p1 AND [DISABLED_AT] IS NULL AND [FAILING_SINCE] <= CAST(@p3 AS datetime2(3));
    SELECT CASE WHEN @@ROWCOUNT > 0 THEN CAST(@p2 AS datetime2(3)) END AS [disabledAt];`,
  insert: `INSERT INTO [dbo].[WEBHOOK_DELIVERY] ([EVENT_ID], [SUBJECT_ID], [DOCUMENT_ID], [ATTEMPT],
      [ATTEMPTED_AT], [OUTCOME], [HTTP_STATUS], [ERROR], [DURATION_MS], [RETRY_IN_SECONDS], [MESSAGE_ID])
    VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8, @p9, @p10, @p11)`,
};

/** The delivery log on a SQL Server tenant database. */
export function createMssqlWebhookDeliveryLog(db: Pick<Database, 'query'>): WebhookDeliveryLog {
  return createSqlWebhookDeliveryLog(db, MSSQL_DELIVERY_LOG_STATEMENTS);
}
