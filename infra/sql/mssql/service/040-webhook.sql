-- =============================================================================
-- Receipt webhook – SQL Server. IDEMPOTENT: safe to run any number of times.
-- SERVICE: what npm run db:apply creates on a tenant's database (only the service's objects).
-- One row per delivery attempt (and per decision not to send).
-- sqlcmd -I -f 65001 -i 040-webhook.sql
-- =============================================================================
SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
SET NOCOUNT ON;
GO

IF OBJECT_ID(N'dbo.WEBHOOK_DELIVERY', N'U') IS NULL
BEGIN
    CREATE TABLE dbo.WEBHOOK_DELIVERY (
        ID               bigint IDENTITY(1, 1) NOT NULL,
        -- The tenant whose event it is: read through the Data API, a tenant sees its own rows only
        -- (tenants may share a database; N'': recorded before tenants were).
        TENANT           nvarchar(63)  NOT NULL CONSTRAINT DF_WEBHOOK_DELIVERY_TENANT DEFAULT (N''),
        EVENT_ID         nvarchar(64)  NOT NULL,  -- the webhook-id header
        SUBJECT_ID       int           NOT NULL,
        DOCUMENT_ID      bigint        NOT NULL,
        ATTEMPT          int           NOT NULL,  -- 1-based: attempts recorded for MESSAGE_ID before it + 1
        ATTEMPTED_AT     datetime2(3)  NOT NULL,  -- UTC
        OUTCOME          nvarchar(20)  NOT NULL,
        HTTP_STATUS      int           NULL,
        ERROR            nvarchar(400) NULL,
        DURATION_MS      int           NULL,
        RETRY_IN_SECONDS int           NULL,
        MESSAGE_ID       nvarchar(100) NULL,      -- the queue message that carried this copy of the event
        CONSTRAINT PK_WEBHOOK_DELIVERY PRIMARY KEY (ID),
        CONSTRAINT CK_WEBHOOK_DELIVERY_OUTCOME CHECK (OUTCOME IN (
            N'delivered', N'retrying', N'failed', N'gone', N'refused', N'skipped', N'duplicate', N'unknown_subject',
            N'disabled', N'resent', N'requeued'))
    );
END;
GO

-- Added after the first release: attempts are counted per queue message (not by the queue's
-- receive count, which a throttled consumer inflates).
IF COL_LENGTH(N'dbo.WEBHOOK_DELIVERY', N'MESSAGE_ID') IS NULL
    ALTER TABLE dbo.WEBHOOK_DELIVERY ADD MESSAGE_ID nvarchar(100) NULL;
GO

-- Added when tenants could share a database: every row is its tenant's (N'' for older rows).
IF COL_LENGTH(N'dbo.WEBHOOK_DELIVERY', N'TENANT') IS NULL
    ALTER TABLE dbo.WEBHOOK_DELIVERY ADD TENANT nvarchar(63) NOT NULL
        CONSTRAINT DF_WEBHOOK_DELIVERY_TENANT DEFAULT (N'');
GO

-- Added with endpoint disabling and the admin function's resend: outcomes `disabled` and `resent`.
-- Made anew on every run (the T-SQL engine of the tests cannot read a constraint's definition to
-- tell the old one from the new): in one transaction, so that the table is never without it.
BEGIN TRANSACTION;
IF OBJECT_ID(N'dbo.CK_WEBHOOK_DELIVERY_OUTCOME', N'C') IS NOT NULL
    ALTER TABLE dbo.WEBHOOK_DELIVERY DROP CONSTRAINT CK_WEBHOOK_DELIVERY_OUTCOME;
ALTER TABLE dbo.WEBHOOK_DELIVERY ADD CONSTRAINT CK_WEBHOOK_DELIVERY_OUTCOME CHECK (OUTCOME IN (
    N'delivered', N'retrying', N'failed', N'gone', N'refused', N'skipped', N'duplicate', N'unknown_subject',
    N'disabled', N'resent', N'requeued'));
COMMIT TRANSACTION;
GO

-- An event is delivered at most once: a second copy finds this row and is not sent again.
-- Filtered index: sessions that INSERT need QUOTED_IDENTIFIER ON (the service's driver sets it;
-- only the service writes this table).
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'dbo.WEBHOOK_DELIVERY') AND name = N'UX_WEBHOOK_DELIVERY_DELIVERED')
BEGIN
    BEGIN TRY
        CREATE UNIQUE NONCLUSTERED INDEX UX_WEBHOOK_DELIVERY_DELIVERED ON dbo.WEBHOOK_DELIVERY (EVENT_ID)
            WHERE OUTCOME = N'delivered';
    END TRY
    BEGIN CATCH
        -- 1913 (SQL Server) or 2714 (Babelfish, which stores the name with a hash suffix): it exists.
        IF ERROR_NUMBER() NOT IN (1913, 2714) THROW;
    END CATCH;
END;
GO
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'dbo.WEBHOOK_DELIVERY') AND name = N'IX_WEBHOOK_DELIVERY_DOCUMENT')
BEGIN
    BEGIN TRY
        CREATE NONCLUSTERED INDEX IX_WEBHOOK_DELIVERY_DOCUMENT ON dbo.WEBHOOK_DELIVERY (SUBJECT_ID, DOCUMENT_ID);
    END TRY
    BEGIN CATCH
        -- 1913 (SQL Server) or 2714 (Babelfish, which stores the name with a hash suffix): it exists.
        IF ERROR_NUMBER() NOT IN (1913, 2714) THROW;
    END CATCH;
END;
GO

-- Added with the admin's claimed recover: the `requeued` row a recover writes names the failed or
-- disabled row it sends again, once (a second recover at once finds the claim taken).
IF COL_LENGTH(N'dbo.WEBHOOK_DELIVERY', N'RECOVERS_ID') IS NULL
    ALTER TABLE dbo.WEBHOOK_DELIVERY ADD RECOVERS_ID bigint NULL;
GO
IF INDEXPROPERTY(OBJECT_ID(N'dbo.WEBHOOK_DELIVERY'), N'UX_WEBHOOK_DELIVERY_RECOVERS', 'IndexID') IS NULL
BEGIN
    BEGIN TRY
        CREATE UNIQUE NONCLUSTERED INDEX UX_WEBHOOK_DELIVERY_RECOVERS ON dbo.WEBHOOK_DELIVERY (RECOVERS_ID)
            WHERE RECOVERS_ID IS NOT NULL;
    END TRY
    BEGIN CATCH
        IF ERROR_NUMBER() NOT IN (1913, 2714) THROW;
    END CATCH;
END;
GO

-- Outcomes of an event since a time (the admin function's recover) and a subject's last attempts
-- (its status): by time, with the event and subject.
IF INDEXPROPERTY(OBJECT_ID(N'dbo.WEBHOOK_DELIVERY'), N'IX_WEBHOOK_DELIVERY_ATTEMPTED', 'IndexID') IS NULL
BEGIN
    BEGIN TRY
        CREATE NONCLUSTERED INDEX IX_WEBHOOK_DELIVERY_ATTEMPTED ON dbo.WEBHOOK_DELIVERY (ATTEMPTED_AT, SUBJECT_ID);
    END TRY
    BEGIN CATCH
        IF ERROR_NUMBER() NOT IN (1913, 2714) THROW;
    END CATCH;
END;
GO

-- The webhook secret memory and endpoint state: one row per subject, written by the service only
-- (CONTRACT.md section 6). Holds the secret last used and the one before it (signing during a
-- rotation's overlap), so it is never served by the Data API, whatever a tenant allows.
IF OBJECT_ID(N'dbo.WEBHOOK_ENDPOINT', N'U') IS NULL
BEGIN
    CREATE TABLE dbo.WEBHOOK_ENDPOINT (
        -- Per tenant and subject: tenants sharing a database (and so a SUBJECT table) each keep
        -- their own secret memory and failure count, and one never disables the other's.
        TENANT            nvarchar(63)  NOT NULL CONSTRAINT DF_WEBHOOK_ENDPOINT_TENANT DEFAULT (N''),
        SUBJECT_ID        int           NOT NULL,
        WEBHOOK_URL       nvarchar(500) NULL,     -- SUBJECT.WEBHOOK_URL as last seen
        SECRET            nvarchar(200) NULL,     -- SUBJECT.SECRET_WEBHOOK as last used
        PREVIOUS_SECRET   nvarchar(200) NULL,     -- the one before: signs too until the overlap ends
        SECRET_CHANGED_AT datetime2(3)  NULL,     -- UTC: when SECRET was first used
        FAILING_SINCE     datetime2(3)  NULL,     -- UTC: first failed attempt after the last delivery
        DISABLED_AT       datetime2(3)  NULL,     -- UTC: NULL while enabled
        ENABLED_AT        datetime2(3)  NOT NULL, -- UTC: first seen or last enabled again
        SLOW_SINCE        datetime2(3)  NULL,     -- UTC: answers slower than the fast lane allows (its attempts go through the slow lane)
        CONSTRAINT PK_WEBHOOK_ENDPOINT PRIMARY KEY (TENANT, SUBJECT_ID)
    );
END;
GO
-- Added with the delivery lanes: a receiver slower than the fast lane allows gets its attempts in the slow lane.
IF COL_LENGTH(N'dbo.WEBHOOK_ENDPOINT', N'SLOW_SINCE') IS NULL
    ALTER TABLE dbo.WEBHOOK_ENDPOINT ADD SLOW_SINCE datetime2(3) NULL;
GO
-- Added when tenants could share a database: the key becomes (TENANT, SUBJECT_ID). Rows from
-- before get N'' (no tenant's): the next event of each subject starts a fresh memory for its
-- tenant. In its own batches, so that each compiles against the columns it names.
IF COL_LENGTH(N'dbo.WEBHOOK_ENDPOINT', N'TENANT') IS NULL
    ALTER TABLE dbo.WEBHOOK_ENDPOINT ADD TENANT nvarchar(63) NOT NULL
        CONSTRAINT DF_WEBHOOK_ENDPOINT_TENANT DEFAULT (N'');
GO
IF (SELECT COUNT(*) FROM sys.indexes AS i
      JOIN sys.index_columns AS ic ON ic.object_id = i.object_id AND ic.index_id = i.index_id
      WHERE i.object_id = OBJECT_ID(N'dbo.WEBHOOK_ENDPOINT') AND i.is_primary_key = 1) = 1
BEGIN
    BEGIN TRANSACTION;
    ALTER TABLE dbo.WEBHOOK_ENDPOINT DROP CONSTRAINT PK_WEBHOOK_ENDPOINT;
    ALTER TABLE dbo.WEBHOOK_ENDPOINT ADD CONSTRAINT PK_WEBHOOK_ENDPOINT PRIMARY KEY (TENANT, SUBJECT_ID);
    COMMIT TRANSACTION;
END;
GO

-- Which copy of an event is sending it now (CONTRACT 6: an event delivered is not delivered again
-- when it arrives twice, also when two copies arrive at once on two instances): a copy claims its
-- event before it sends, for as long as its attempt can take; another copy that finds a live claim
-- of another message waits, and finds the event delivered when it comes back. Removed after the
-- attempt; a claim left by a crashed instance lapses at UNTIL.
IF OBJECT_ID(N'dbo.SVC_WEBHOOK_SENDING', N'U') IS NULL
BEGIN
    CREATE TABLE dbo.SVC_WEBHOOK_SENDING (
        TENANT     nvarchar(63)  NOT NULL,
        EVENT_ID   nvarchar(64)  NOT NULL,  -- WEBHOOK_DELIVERY.EVENT_ID
        MESSAGE_ID nvarchar(100) NOT NULL,  -- the queue message (its series) whose copy sends
        UNTIL      datetime2(3)  NOT NULL,  -- UTC: the claim lapses then
        CONSTRAINT PK_SVC_WEBHOOK_SENDING PRIMARY KEY (TENANT, EVENT_ID)
    );
END;
GO
