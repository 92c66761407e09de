-- =============================================================================
-- Change feed (CONTRACT.md section 4b) – SQL Server 2016+, Azure SQL, the T-SQL engine.
-- SERVICE: what npm run db:apply creates on a tenant's database (only the service's objects).
-- IDEMPOTENT: safe to run any number of times.
-- sqlcmd -I -f 65001 -i 050-change-feed.sql
--
-- The ERP writes its tables itself, so what changed is recorded where the writes happen: an
-- AFTER INSERT, UPDATE, DELETE trigger on each recorded table adds the keys it touched to that
-- table's change table, in the writer's own transaction (a rolled-back write leaves nothing).
-- Those rows carry no order yet: a number handed out while a transaction writes is not the order
-- in which transactions become visible. The service gives them one when it reads: a "stamp" takes
-- the next batch number under the feed row's lock and writes it into every change row that is
-- already committed (READPAST skips rows an open transaction still holds; on PostgreSQL under the
-- engine, MVCC hides them). A transaction that commits later is stamped by a later read, with a
-- higher number, so "every batch after N" never misses a commit (docs/sql-server.md, "Change feed").
--
-- Turn a table on: EXEC dbo.SVC_CHANGE_FEED_ENABLE N'dbo', N'<TABLE>' (npm run db:apply --
-- '<connection string>' --change-feed <TABLE>,… does the same), then list it in the tenant's
-- "changeFeed" in the registry. Turn it off: EXEC dbo.SVC_CHANGE_FEED_DISABLE N'dbo', N'<TABLE>'.
-- =============================================================================
SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
SET NOCOUNT ON;
GO

-- One row per recorded table: the last batch number handed out (its lock serialises stamps), the
-- batches removed by the retention clean-up, and the recording's identity (a new FEED_ID when a
-- table is turned on again: tokens of the earlier recording no longer apply).
IF OBJECT_ID(N'dbo.SVC_CHANGE_FEED', N'U') IS NULL
BEGIN
    CREATE TABLE dbo.SVC_CHANGE_FEED (
        SOURCE_SCHEMA    nvarchar(128)    NOT NULL,
        SOURCE_NAME      nvarchar(128)    NOT NULL,
        CHANGE_TABLE     nvarchar(128)    NOT NULL,  -- in SOURCE_SCHEMA
        FEED_ID          uniqueidentifier NOT NULL CONSTRAINT DF_SVC_CHANGE_FEED_FEED_ID DEFAULT (NEWID()),
        LAST_BATCH       bigint           NOT NULL CONSTRAINT DF_SVC_CHANGE_FEED_LAST_BATCH DEFAULT (0),
        REMOVED_TO_BATCH bigint           NOT NULL CONSTRAINT DF_SVC_CHANGE_FEED_REMOVED DEFAULT (0),
        INSTALLED_AT     datetime2(3)     NOT NULL CONSTRAINT DF_SVC_CHANGE_FEED_INSTALLED_AT DEFAULT (SYSUTCDATETIME()),
        CONSTRAINT PK_SVC_CHANGE_FEED PRIMARY KEY (SOURCE_SCHEMA, SOURCE_NAME)
    );
END;
GO

IF OBJECT_ID(N'dbo.SVC_CHANGE_FEED_ENABLE', N'P') IS NULL
    EXEC (N'CREATE PROCEDURE dbo.SVC_CHANGE_FEED_ENABLE AS RETURN 0;');
GO

-- Creates (when missing) the change table SVC_CHANGES_<TABLE> beside the table, with the table's
-- primary-key columns and types, and the trigger SVC_CHANGES_<TABLE>_TRG that fills it; registers
-- the table in SVC_CHANGE_FEED. Names are checked against the catalogue and quoted with QUOTENAME.
-- A WHILE loop rather than STRING_AGG, which SQL Server 2016 lacks.
ALTER PROCEDURE dbo.SVC_CHANGE_FEED_ENABLE
    @SourceSchema nvarchar(128),
    @SourceName   nvarchar(128)
AS
BEGIN
    SET NOCOUNT ON;
    -- An error inside the upgrade's transaction rolls it back whole.
    SET XACT_ABORT ON;
    DECLARE @schema nvarchar(128), @table nvarchar(128);
    SELECT @schema = t.TABLE_SCHEMA, @table = t.TABLE_NAME
    FROM INFORMATION_SCHEMA.TABLES AS t
    WHERE t.TABLE_TYPE = 'BASE TABLE' AND LOWER(t.TABLE_SCHEMA) = LOWER(@SourceSchema)
      AND LOWER(t.TABLE_NAME) = LOWER(@SourceName);
    IF @table IS NULL
        THROW 50001, N'SVC_CHANGE_FEED_ENABLE: no such table', 1;
    -- The longest name derived from the table's, IX_SVC_CHANGES_<TABLE>_BATCH, must fit sysname
    -- (128): past it a name would be cut (or QUOTENAME's NULL), so it is refused instead.
    IF LEN(N'IX_SVC_CHANGES_' + @table + N'_BATCH') > 128
    BEGIN
        DECLARE @tooLong nvarchar(2048) = CONCAT(N'SVC_CHANGE_FEED_ENABLE: the change feed cannot record table ', @table,
            N': its name has ', LEN(@table), N' characters, and the names derived from it (the longest, ',
            N'IX_SVC_CHANGES_<table>_BATCH, 21 more) would pass the limit of 128: a recorded table''s name may have at most 107 characters');
        THROW 50003, @tooLong, 1;
    END;

    DECLARE @keys TABLE (ORDINAL int NOT NULL, COLUMN_NAME nvarchar(128) NOT NULL, TYPE_TEXT nvarchar(200) NOT NULL);
    INSERT INTO @keys (ORDINAL, COLUMN_NAME, TYPE_TEXT)
    SELECT k.ORDINAL_POSITION, c.COLUMN_NAME,
        c.DATA_TYPE + CASE
            WHEN c.DATA_TYPE IN ('char', 'nchar', 'varchar', 'nvarchar', 'binary', 'varbinary')
                THEN N'(' + CASE WHEN c.CHARACTER_MAXIMUM_LENGTH = -1 THEN N'max'
                                 ELSE CAST(c.CHARACTER_MAXIMUM_LENGTH AS nvarchar(10)) END + N')'
            WHEN c.DATA_TYPE IN ('decimal', 'numeric')
                THEN N'(' + CAST(c.NUMERIC_PRECISION AS nvarchar(10)) + N',' + CAST(c.NUMERIC_SCALE AS nvarchar(10)) + N')'
            WHEN c.DATA_TYPE IN ('datetime2', 'time', 'datetimeoffset')
                THEN N'(' + CAST(c.DATETIME_PRECISION AS nvarchar(10)) + N')'
            ELSE N'' END
    FROM INFORMATION_SCHEMA.TABLE_CONSTRAINTS AS pk
    JOIN INFORMATION_SCHEMA.KEY_COLUMN_USAGE AS k
      ON k.CONSTRAINT_SCHEMA = pk.CONSTRAINT_SCHEMA AND k.CONSTRAINT_NAME = pk.CONSTRAINT_NAME
     AND k.TABLE_SCHEMA = pk.TABLE_SCHEMA AND k.TABLE_NAME = pk.TABLE_NAME
    JOIN INFORMATION_SCHEMA.COLUMNS AS c
      ON c.TABLE_SCHEMA = k.TABLE_SCHEMA AND c.TABLE_NAME = k.TABLE_NAME AND c.COLUMN_NAME = k.COLUMN_NAME
    WHERE pk.CONSTRAINT_TYPE = 'PRIMARY KEY' AND pk.TABLE_SCHEMA = @schema AND pk.TABLE_NAME = @table;
    IF NOT EXISTS (SELECT 1 FROM @keys)
        THROW 50002, N'SVC_CHANGE_FEED_ENABLE: the table has no primary key', 1;

    DECLARE @changeTable nvarchar(128) = N'SVC_CHANGES_' + @table;
    DECLARE @trigger nvarchar(128) = N'SVC_CHANGES_' + @table + N'_TRG';
    DECLARE @qualifiedChanges nvarchar(300) = QUOTENAME(@schema) + N'.' + QUOTENAME(@changeTable);
    DECLARE @columns nvarchar(max) = N'', @names nvarchar(max) = N'', @ordinal int = 0, @name nvarchar(128), @type nvarchar(200);
    WHILE 1 = 1
    BEGIN
        SELECT TOP (1) @ordinal = ORDINAL, @name = COLUMN_NAME, @type = TYPE_TEXT FROM @keys WHERE ORDINAL > @ordinal ORDER BY ORDINAL;
        IF @@ROWCOUNT = 0 BREAK;
        SET @columns = @columns + QUOTENAME(@name) + N' ' + @type + N' NOT NULL, ';
        SET @names = @names + CASE WHEN @names = N'' THEN N'' ELSE N', ' END + QUOTENAME(@name);
    END;

    DECLARE @sql nvarchar(max);
    IF OBJECT_ID(@qualifiedChanges, N'U') IS NULL
    BEGIN
        SET @sql = N'CREATE TABLE ' + @qualifiedChanges + N' (CHANGE_ID bigint IDENTITY(1, 1) NOT NULL, ' + @columns
            + N'BATCH bigint NULL, STAMPED_AT datetime2(3) NULL, TRACEPARENT varchar(55) NULL, CONSTRAINT ' + QUOTENAME(N'PK_' + @changeTable)
            + N' PRIMARY KEY (CHANGE_ID))';
        EXEC (@sql);
        -- The reads: unstamped rows (BATCH IS NULL), and a range of batches by key.
        SET @sql = N'CREATE NONCLUSTERED INDEX ' + QUOTENAME(N'IX_' + @changeTable + N'_BATCH') + N' ON '
            + @qualifiedChanges + N' (BATCH, ' + @names + N')';
        EXEC (@sql);
    END;

    -- A change table of an earlier version has no TRACEPARENT, and its trigger does not fill it: the
    -- column is added and the trigger made again, in one transaction (no write goes unrecorded
    -- between the two; the T-SQL engine has no ALTER TRIGGER, and SQL Server's works alike).
    BEGIN TRANSACTION;
    IF NOT EXISTS (SELECT 1 FROM INFORMATION_SCHEMA.COLUMNS
                   WHERE TABLE_SCHEMA = @schema AND TABLE_NAME = @changeTable AND COLUMN_NAME = N'TRACEPARENT')
    BEGIN
        SET @sql = N'ALTER TABLE ' + @qualifiedChanges + N' ADD TRACEPARENT varchar(55) NULL';
        EXEC (@sql);
        IF OBJECT_ID(QUOTENAME(@schema) + N'.' + QUOTENAME(@trigger), N'TR') IS NOT NULL
        BEGIN
            SET @sql = N'DROP TRIGGER ' + QUOTENAME(@schema) + N'.' + QUOTENAME(@trigger);
            EXEC (@sql);
        END;
    END;

    IF OBJECT_ID(QUOTENAME(@schema) + N'.' + QUOTENAME(@trigger), N'TR') IS NULL
    BEGIN
        -- The keys of the rows written, once per statement (an update's old and new keys alike),
        -- with the writer's trace (CONTRACT 8a): the `traceparent` the service puts in its session's
        -- context for a write of its own (NULL for the ERP's own writes), which the notifier's pass
        -- links to.
        SET @sql = N'CREATE TRIGGER ' + QUOTENAME(@schema) + N'.' + QUOTENAME(@trigger) + N' ON '
            + QUOTENAME(@schema) + N'.' + QUOTENAME(@table) + N' AFTER INSERT, UPDATE, DELETE AS BEGIN SET NOCOUNT ON; '
            + N'DECLARE @writer varchar(55) = CAST(SESSION_CONTEXT(N''svc.traceparent'') AS varchar(55)); '
            + N'INSERT INTO ' + @qualifiedChanges + N' (' + @names + N', TRACEPARENT) SELECT ' + @names + N', @writer FROM (SELECT '
            + @names + N' FROM inserted UNION SELECT ' + @names + N' FROM deleted) AS written; END';
        EXEC (@sql);
    END;
    COMMIT;

    IF NOT EXISTS (SELECT 1 FROM dbo.SVC_CHANGE_FEED WHERE SOURCE_SCHEMA = @schema AND SOURCE_NAME = @table)
        INSERT INTO dbo.SVC_CHANGE_FEED (SOURCE_SCHEMA, SOURCE_NAME, CHANGE_TABLE) VALUES (@schema, @table, @changeTable);
END;
GO

IF OBJECT_ID(N'dbo.SVC_CHANGE_FEED_DISABLE', N'P') IS NULL
    EXEC (N'CREATE PROCEDURE dbo.SVC_CHANGE_FEED_DISABLE AS RETURN 0;');
GO

-- Stops recording a table: drops its trigger and change table and forgets it; tokens for it then
-- answer 410, and the table answers changes_not_recorded until it is turned on again.
ALTER PROCEDURE dbo.SVC_CHANGE_FEED_DISABLE
    @SourceSchema nvarchar(128),
    @SourceName   nvarchar(128)
AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @schema nvarchar(128), @table nvarchar(128), @changeTable nvarchar(128), @sql nvarchar(max);
    SELECT @schema = SOURCE_SCHEMA, @table = SOURCE_NAME, @changeTable = CHANGE_TABLE
    FROM dbo.SVC_CHANGE_FEED
    WHERE LOWER(SOURCE_SCHEMA) = LOWER(@SourceSchema) AND LOWER(SOURCE_NAME) = LOWER(@SourceName);
    IF @table IS NULL RETURN 0;
    IF OBJECT_ID(QUOTENAME(@schema) + N'.' + QUOTENAME(@changeTable + N'_TRG'), N'TR') IS NOT NULL
    BEGIN
        SET @sql = N'DROP TRIGGER ' + QUOTENAME(@schema) + N'.' + QUOTENAME(@changeTable + N'_TRG');
        EXEC (@sql);
    END;
    IF OBJECT_ID(QUOTENAME(@schema) + N'.' + QUOTENAME(@changeTable), N'U') IS NOT NULL
    BEGIN
        SET @sql = N'DROP TABLE ' + QUOTENAME(@schema) + N'.' + QUOTENAME(@changeTable);
        EXEC (@sql);
    END;
    DELETE FROM dbo.SVC_CHANGE_FEED WHERE SOURCE_SCHEMA = @schema AND SOURCE_NAME = @table;
END;
GO

-- Tables recorded by an earlier version get the writer's TRACEPARENT (the procedure adds what is
-- missing and leaves the rest): every table of the feed, once per run.
DECLARE @upgradeSchema nvarchar(128) = N'', @upgradeName nvarchar(128) = N'';
WHILE 1 = 1
BEGIN
    SELECT TOP (1) @upgradeSchema = SOURCE_SCHEMA, @upgradeName = SOURCE_NAME
    FROM dbo.SVC_CHANGE_FEED
    WHERE SOURCE_SCHEMA > @upgradeSchema OR (SOURCE_SCHEMA = @upgradeSchema AND SOURCE_NAME > @upgradeName)
    ORDER BY SOURCE_SCHEMA, SOURCE_NAME;
    IF @@ROWCOUNT = 0 BREAK;
    EXEC dbo.SVC_CHANGE_FEED_ENABLE @upgradeSchema, @upgradeName;
END;
GO
