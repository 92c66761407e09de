-- =============================================================================
-- Exactly once (CONTRACT.md section 5a) – SQL Server 2016+, Azure SQL, the T-SQL engine.
-- SERVICE: what npm run db:apply creates on a tenant's database (only the service's objects).
-- IDEMPOTENT: safe to run any number of times.
-- sqlcmd -I -f 65001 -i 090-idempotency.sql
--
-- A call sent with an Idempotency-Key runs once: its answer is recorded under the key in the
-- transaction of the call's effects (the procedure's writes and the journal's final answer, the
-- SVCDOC row, the subscription), so that a retry gets that answer instead of running again, and a
-- call that never committed leaves no record behind. Which call holds a key while it runs is an
-- application lock its transaction owns (sp_getapplock @LockOwner = 'Transaction'), not a row here:
-- a killed process or a lost session gives it back with its transaction.
-- The recorded answer of a subscription's creation holds its secret: like SVC_SUBSCRIPTION, this
-- table is never a Data API source (shared/core/data-api/data-source.ts, INTERNAL_TABLES).
-- =============================================================================
SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
SET NOCOUNT ON;
GO

-- One row per key: its recorded answer, kept until EXPIRES_AT (the tenant's
-- idempotencyRetentionHours after the call), then removed by the scheduled clean-up
-- (changeFeedRetention: DELETE TOP (1000) … WHERE EXPIRES_AT < SYSUTCDATETIME(), looped).
IF OBJECT_ID(N'dbo.SVC_IDEMPOTENCY', N'U') IS NULL
BEGIN
    CREATE TABLE dbo.SVC_IDEMPOTENCY (
        -- Hex SHA-256 of tenant, caller and key: another tenant's or caller's equal key is another
        -- key, and the key as sent (which a caller may have made of anything) is never stored.
        KEY_DIGEST   char(64)       NOT NULL,
        TENANT       nvarchar(63)   NOT NULL,
        FINGERPRINT  char(64)       NOT NULL,  -- hex SHA-256 of the route and the request as sent
        HTTP_STATUS  int            NOT NULL,
        CONTENT_TYPE nvarchar(200)  NULL,
        HEADERS      nvarchar(max)  NULL,      -- a JSON object of further answer headers
        BODY         varbinary(max) NULL,      -- the answer's bytes, replayed as they were
        OBJECT_KEY   nvarchar(1024) NULL,      -- an answer over the inline limit: its S3 object
        JOURNAL_ID   int            NULL,      -- WS_JOURNAL.ID of a Web API call
        CREATED_AT   datetime2(3)   NOT NULL CONSTRAINT DF_SVC_IDEMPOTENCY_CREATED_AT DEFAULT (SYSUTCDATETIME()),  -- UTC
        EXPIRES_AT   datetime2(3)   NOT NULL,  -- UTC
        CONSTRAINT PK_SVC_IDEMPOTENCY PRIMARY KEY (KEY_DIGEST)
    );
END;
GO
-- The clean-up's reads: the oldest expired rows first, without a scan of the answers.
IF INDEXPROPERTY(OBJECT_ID(N'dbo.SVC_IDEMPOTENCY'), N'IX_SVC_IDEMPOTENCY_EXPIRES', 'IndexID') IS NULL
BEGIN
    BEGIN TRY
        CREATE NONCLUSTERED INDEX IX_SVC_IDEMPOTENCY_EXPIRES ON dbo.SVC_IDEMPOTENCY (EXPIRES_AT);
    END TRY
    BEGIN CATCH
        -- 1913 (SQL Server) or 2714 (the T-SQL engine, which stores the name with a hash suffix): it exists.
        IF ERROR_NUMBER() NOT IN (1913, 2714) THROW;
    END CATCH;
END;
GO
