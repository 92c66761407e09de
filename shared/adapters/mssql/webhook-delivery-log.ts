/** The webhook's delivery log (`WEBHOOK_DELIVERY`, `SUBJECT`; infra/sql/mssql/040-webhook.sql) in T-SQL. */
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
        WHERE [EVENT_ID] = @p1 AND [OUTCOME] = 'delivered') AS [delivered],
      (SELECT COUNT(*) FROM [dbo].[WEBHOOK_DELIVERY]
        WHERE [SUBJECT_ID] = @p2 AND [DOCUMENT_ID] = @p3 AND [EVENT_ID] = @p1 AND [MESSAGE_ID] = @p4
          AND [OUTCOME] IN ('retrying', 'failed')) AS [attemptsMade],
      [s].[ID] AS [subjectId],
      [s].[WEBHOOK_URL] AS [webhookUrl],
      [s].[SECRET_WEBHOOK] AS [secret]
    FROM (SELECT 1 AS [one]) AS [x]
    LEFT JOIN [dbo].[SUBJECT] AS [s] ON [s].[ID] = @p2`,
  insert: `INSERT INTO [dbo].[WEBHOOK_DELIVERY] ([EVENT_ID], [SUBJECT_ID], [DOCUMENT_ID], [ATTEMPT],
      [ATTEMPTED_AT], [OUTCOME], [HTTP_STATUS], [ERROR], [DURATION_MS], [RETRY_IN_SECONDS], [MESSAGE_ID])
    VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8, @p9, @p10, @p11)`,
};

/** The delivery log on a SQL Server tenant database. */
export function createMssqlWebhookDeliveryLog(db: Pick<Database, 'query'>): WebhookDeliveryLog {
  return createSqlWebhookDeliveryLog(db, MSSQL_DELIVERY_LOG_STATEMENTS);
}
