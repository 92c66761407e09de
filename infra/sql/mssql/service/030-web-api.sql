-- =============================================================================
-- Web API – operations, journal and replay guard for SQL Server (2016+,
-- database compatibility level 130+ for OPENJSON).
--
-- Same objects and names as infra/sql/embedded/030-web-api.sql (PGlite).
-- SERVICE: what npm run db:apply creates on a tenant's database. IDEMPOTENT: tables are
-- created only when missing and never altered (sqlcmd -I -f 65001 -i ...). The demo's
-- operations are in demo/060-demo-procedures.sql. WS_JOURNAL.APPLICATION_ID is the application's
-- id in the tenant registry (or in the ERP's own register WS_APPLICATION, where a tenant names it:
-- read only, never created here); no foreign key, which the registry's ids could not satisfy and
-- which would change what the ERP may do with its own table.
--
-- An operation (WS_OPERATION.VLTYP) is a procedure with ONE parameter
-- @params nvarchar(max): the request's params as a JSON array
-- [{"name": value, ...}, ...] (XML values arrive as strings). Its first result
-- set is the answer's data; its column names are the answer's names
-- (lower-case). An error raised with THROW/RAISERROR and a number >= 50000
-- reaches the caller with its message.
-- =============================================================================
SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
SET NOCOUNT ON;
GO

-- -----------------------------------------------------------------------------
-- 1. WS_OPERATION – vltyp → procedure and row name (rows are <row<ROW_NAME>> in XML)
-- -----------------------------------------------------------------------------
IF OBJECT_ID(N'dbo.WS_OPERATION', N'U') IS NULL
BEGIN
    CREATE TABLE dbo.WS_OPERATION (
        VLTYP          int            NOT NULL,
        NAZEV          nvarchar(200)  NULL,
        PROCEDURE_NAME nvarchar(261)  NOT NULL,
        ROW_NAME       nvarchar(64)   NOT NULL,
        AKTIVNI        smallint       NOT NULL CONSTRAINT DF_WS_OPERATION_AKTIVNI DEFAULT (1),
        CONSTRAINT PK_WS_OPERATION PRIMARY KEY (VLTYP),
        -- 997 is the service's own: the result of an earlier call.
        CONSTRAINT CK_WS_OPERATION_VLTYP CHECK (VLTYP <> 997),
        CONSTRAINT CK_WS_OPERATION_AKTIVNI CHECK (AKTIVNI IN (-1, 0, 1))
    );
END;
GO

-- -----------------------------------------------------------------------------
-- 2. WS_JOURNAL – every accepted call; the answer's "id" is ID (times in UTC)
-- -----------------------------------------------------------------------------
IF OBJECT_ID(N'dbo.WS_JOURNAL', N'U') IS NULL
BEGIN
    CREATE TABLE dbo.WS_JOURNAL (
        ID             int IDENTITY(1, 1) NOT NULL,
        APPLICATION_ID int            NOT NULL,
        VLTYP          int            NOT NULL,
        CALL_MODE      varchar(5)     NOT NULL,
        STATE          varchar(8)     NOT NULL CONSTRAINT DF_WS_JOURNAL_STATE DEFAULT ('running'),
        REQUEST        nvarchar(max)  NOT NULL,
        ANSWER         nvarchar(max)  NULL,
        VL_RESULT      int            NULL,
        ROW_NAME       nvarchar(64)   NULL,
        ATTEMPTS       int            NOT NULL CONSTRAINT DF_WS_JOURNAL_ATTEMPTS DEFAULT (0),
        LEASE_UNTIL    datetime2(3)   NULL,
        REQUEST_ID     nvarchar(100)  NULL,
        CREATED_AT     datetime2(3)   NOT NULL CONSTRAINT DF_WS_JOURNAL_CREATED_AT DEFAULT (SYSUTCDATETIME()),
        FINISHED_AT    datetime2(3)   NULL,
        CONSTRAINT PK_WS_JOURNAL PRIMARY KEY (ID),
        CONSTRAINT CK_WS_JOURNAL_STATE CHECK (STATE IN ('running', 'finished', 'failed')),
        CONSTRAINT CK_WS_JOURNAL_CALL_MODE CHECK (CALL_MODE IN ('sync', 'async'))
    );
END;
GO

-- -----------------------------------------------------------------------------
-- 3. WS_REPLAY_GUARD – signed requests already accepted (CheckReplayRequest)
--    The primary key makes the check hold across concurrent Lambdas.
-- -----------------------------------------------------------------------------
IF OBJECT_ID(N'dbo.WS_REPLAY_GUARD', N'U') IS NULL
BEGIN
    CREATE TABLE dbo.WS_REPLAY_GUARD (
        APPLICATION_ID int           NOT NULL,
        REQUEST_DIGEST char(64)      NOT NULL,
        EXPIRES_AT     datetime2(3)  NOT NULL,
        CONSTRAINT PK_WS_REPLAY_GUARD PRIMARY KEY (APPLICATION_ID, REQUEST_DIGEST)
    );
END;
GO
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'dbo.WS_REPLAY_GUARD') AND name = N'IX_WS_REPLAY_GUARD_EXPIRES_AT')
BEGIN
    BEGIN TRY
        CREATE INDEX IX_WS_REPLAY_GUARD_EXPIRES_AT ON dbo.WS_REPLAY_GUARD (EXPIRES_AT);
    END TRY
    BEGIN CATCH
        -- 1913 (SQL Server) or 2714 (Babelfish, which stores the name with a hash suffix): it exists.
        IF ERROR_NUMBER() NOT IN (1913, 2714) THROW;
    END CATCH;
END;
GO

-- -----------------------------------------------------------------------------
-- 4. SVC_JOURNAL – which tenant's call each WS_JOURNAL row is, and in which trace
--    WS_JOURNAL may be the ERP's, shared by every tenant registered on the database: the service
--    adds no column to it, and keeps here whose each call is, written in the same transaction as
--    its journal row. 997 answers a tenant's own journal ids only (another tenant's: 404, 111).
--    TRACE_ID is the W3C trace id of the call's request (CONTRACT 8a: journal id <-> trace id).
-- -----------------------------------------------------------------------------
IF OBJECT_ID(N'dbo.SVC_JOURNAL', N'U') IS NULL
BEGIN
    CREATE TABLE dbo.SVC_JOURNAL (
        JOURNAL_ID bigint       NOT NULL,  -- WS_JOURNAL.ID
        TENANT     nvarchar(63) NOT NULL,
        TRACE_ID   char(32)     NULL,      -- 32 lower-case hex digits
        CONSTRAINT PK_SVC_JOURNAL PRIMARY KEY (JOURNAL_ID)
    );
END;
GO

-- A journal table of an earlier version has no TRACE_ID: added (nothing else changes).
IF NOT EXISTS (SELECT 1 FROM INFORMATION_SCHEMA.COLUMNS
               WHERE TABLE_SCHEMA = N'dbo' AND TABLE_NAME = N'SVC_JOURNAL' AND COLUMN_NAME = N'TRACE_ID')
    ALTER TABLE dbo.SVC_JOURNAL ADD TRACE_ID char(32) NULL;
GO

-- From a trace id to its journal ids. (The T-SQL engine keeps index names of its own in
-- sys.indexes; INDEXPROPERTY finds the index on both, and a race with another run is caught.)
IF INDEXPROPERTY(OBJECT_ID(N'dbo.SVC_JOURNAL'), N'IX_SVC_JOURNAL_TRACE', 'IndexID') IS NULL
BEGIN
    BEGIN TRY
        CREATE NONCLUSTERED INDEX IX_SVC_JOURNAL_TRACE ON dbo.SVC_JOURNAL (TRACE_ID);
    END TRY
    BEGIN CATCH
        IF ERROR_NUMBER() NOT IN (1913, 2714) THROW;
    END CATCH;
END;
GO
