/** The webhook's delivery log (`WEBHOOK_DELIVERY`, `SUBJECT`; infra/sql/mssql/service/040-webhook.sql) in T-SQL. */
import type { Database } from '../../core/database.js';
import type { WebhookDeliveryLog } from '../../core/webhook/delivery-log.js';
import { attemptParameter } from '../sql-common/attempt-log.js';
import {
  createSqlWebhookDeliveryLog,
  type DeliveryLogStatements,
} from '../sql-common/webhook-delivery-log.js';
import { mssqlAttemptInsert } from './attempt-log.js';

/** WEBHOOK_DELIVERY's own columns before an attempt's. */
const OWN = ['EVENT_ID', 'SUBJECT_ID', 'DOCUMENT_ID'];

// One row whether or not the subject exists. The delivered count is served by the unique filtered
// index on delivered events, the attempts of the message by the index on subject and document
// (the event id follows from them within a tenant).
const FIND_TARGET = `SELECT
      (SELECT COUNT(*) FROM [dbo].[WEBHOOK_DELIVERY]
        WHERE [EVENT_ID] = @p1 AND [TENANT] = @p6 AND [OUTCOME] IN ('delivered', 'resent')
          AND (@p5 = 0 OR [MESSAGE_ID] = @p4)) AS [delivered],
      (SELECT COUNT(*) FROM [dbo].[WEBHOOK_DELIVERY]
        WHERE [SUBJECT_ID] = @p2 AND [DOCUMENT_ID] = @p3 AND [EVENT_ID] = @p1 AND [MESSAGE_ID] = @p4
          AND [TENANT] = @p6 AND [OUTCOME] IN ('retrying', 'failed')) AS [attemptsMade],
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
      [e].[ENABLED_AT] AS [enabledAt],
      [e].[SLOW_SINCE] AS [slowSince]
    FROM (SELECT 1 AS [one]) AS [x]
    LEFT JOIN [dbo].[SUBJECT] AS [s] ON [s].[ID] = @p2
    LEFT JOIN [dbo].[WEBHOOK_ENDPOINT] AS [e] ON [e].[TENANT] = @p6 AND [e].[SUBJECT_ID] = [s].[ID]`;

export const MSSQL_DELIVERY_LOG_STATEMENTS: DeliveryLogStatements = {
  findTarget: FIND_TARGET,
  // The claim to send, then the read (statements of one batch, in this order: the read sees a
  // delivery the claim's previous holder recorded before releasing it). The row's lock orders two
  // copies' updates (the second reads the first's committed claim); of two first claims, one inserts
  // and the other finds the key taken (2627) and does not claim. No MERGE: the T-SQL engine has none.
  claimAndFindTarget: `DECLARE @claimed int;
    UPDATE [dbo].[SVC_WEBHOOK_SENDING] SET [MESSAGE_ID] = @p4, [UNTIL] = CAST(@p8 AS datetime2(3))
    WHERE [TENANT] = @p6 AND [EVENT_ID] = @p1
      AND ([MESSAGE_ID] = @p4 OR [UNTIL] < CAST(@p7 AS datetime2(3)));
    SET @claimed = @@ROWCOUNT;
    IF @claimed = 0
    BEGIN
      BEGIN TRY
        INSERT INTO [dbo].[SVC_WEBHOOK_SENDING] ([TENANT], [EVENT_ID], [MESSAGE_ID], [UNTIL])
        SELECT @p6, @p1, @p4, CAST(@p8 AS datetime2(3))
        WHERE NOT EXISTS (SELECT 1 FROM [dbo].[SVC_WEBHOOK_SENDING] WHERE [TENANT] = @p6 AND [EVENT_ID] = @p1);
        SET @claimed = @@ROWCOUNT;
      END TRY
      BEGIN CATCH
        IF ERROR_NUMBER() NOT IN (2627, 2601) THROW;
      END CATCH
    END;
    ${FIND_TARGET.replace(
      /^SELECT/,
      `SELECT
      @claimed AS [claimed],
      (SELECT [UNTIL] FROM [dbo].[SVC_WEBHOOK_SENDING] WHERE [TENANT] = @p6 AND [EVENT_ID] = @p1) AS [heldUntil],`,
    )}`,
  // The first copy of a subject's events to get here makes the row; another that races it finds
  // the key taken (2627) and leaves the row as the first made it.
  insertEndpoint: `BEGIN TRY
      INSERT INTO [dbo].[WEBHOOK_ENDPOINT] ([SUBJECT_ID], [WEBHOOK_URL], [SECRET], [PREVIOUS_SECRET],
        [SECRET_CHANGED_AT], [FAILING_SINCE], [DISABLED_AT], [ENABLED_AT], [SLOW_SINCE], [TENANT])
      SELECT @p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8, @p9, @p10
      WHERE NOT EXISTS (SELECT 1 FROM [dbo].[WEBHOOK_ENDPOINT] WHERE [TENANT] = @p10 AND [SUBJECT_ID] = @p1);
    END TRY
    BEGIN CATCH
      IF ERROR_NUMBER() NOT IN (2627, 2601) THROW;
    END CATCH`,
  updateEndpoint: `UPDATE [dbo].[WEBHOOK_ENDPOINT] SET [WEBHOOK_URL] = @p2, [SECRET] = @p3,
      [PREVIOUS_SECRET] = @p4, [SECRET_CHANGED_AT] = @p5, [FAILING_SINCE] = @p6, [DISABLED_AT] = @p7,
      [ENABLED_AT] = @p8, [SLOW_SINCE] = @p9
    WHERE [TENANT] = @p10 AND [SUBJECT_ID] = @p1`,
  endpointDelivered: `UPDATE [dbo].[WEBHOOK_ENDPOINT] SET [FAILING_SINCE] = NULL,
      [SLOW_SINCE] = CASE WHEN @p2 IS NULL THEN NULL ELSE COALESCE([SLOW_SINCE], CAST(@p2 AS datetime2(3))) END
    WHERE [TENANT] = @p3 AND [SUBJECT_ID] = @p1`,
  endpointSlow: `UPDATE [dbo].[WEBHOOK_ENDPOINT] SET [SLOW_SINCE] = CAST(@p2 AS datetime2(3))
    WHERE [TENANT] = @p3 AND [SUBJECT_ID] = @p1 AND [SLOW_SINCE] IS NULL`,
  // One statement, so that of failures at once exactly one sees the endpoint enabled and disables it.
  // The times typed as the column is (compared as text they would not order as times). Of failures
  // at once, the one whose second statement changes the row disabled it: @@ROWCOUNT says so (an
  // OUTPUT clause would too, but the T-SQL engine returns none on a session with NOCOUNT ON).
  endpointFailed: `UPDATE [dbo].[WEBHOOK_ENDPOINT] SET [FAILING_SINCE] = CAST(@p2 AS datetime2(3))
    WHERE [TENANT] = @p4 AND [SUBJECT_ID] = @p1 AND [DISABLED_AT] IS NULL AND [FAILING_SINCE] IS NULL;
    UPDATE [dbo].[WEBHOOK_ENDPOINT] SET [DISABLED_AT] = CAST(@p2 AS datetime2(3))
    WHERE [TENANT] = @p4 AND [SUBJECT_ID] = @p1 AND [DISABLED_AT] IS NULL
      AND [FAILING_SINCE] <= CAST(@p3 AS datetime2(3));
    SELECT CASE WHEN @@ROWCOUNT > 0 THEN CAST(@p2 AS datetime2(3)) END AS [disabledAt];`,
  // The attempt, then the end of its copy's claim to send (in this order: a copy that claims next
  // reads the delivery). Without DELETE on the claims the attempt is still recorded.
  insert: `${mssqlAttemptInsert('WEBHOOK_DELIVERY', OWN)};
    DELETE FROM [dbo].[SVC_WEBHOOK_SENDING] WHERE [TENANT] = @p${attemptParameter(OWN.length, 'TENANT')}
      AND [EVENT_ID] = @p1 AND [MESSAGE_ID] = @p${attemptParameter(OWN.length, 'MESSAGE_ID')}`,
  releaseSending: `DELETE FROM [dbo].[SVC_WEBHOOK_SENDING]
    WHERE [TENANT] = @p3 AND [EVENT_ID] = @p1 AND [MESSAGE_ID] = @p2`,
};

/** A tenant's delivery log on its SQL Server database. */
export function createMssqlWebhookDeliveryLog(
  db: Pick<Database, 'query'>,
  tenant: string,
): WebhookDeliveryLog {
  return createSqlWebhookDeliveryLog(db, MSSQL_DELIVERY_LOG_STATEMENTS, tenant);
}
