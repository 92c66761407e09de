-- =============================================================================
-- DEMO ONLY (npm run db:apply -- --demo; the local stack): the demo's procedures and Web API
-- operations. Run after service/030-web-api.sql (WS_OPERATION). IDEMPOTENT (stub + ALTER
-- PROCEDURE; operations inserted only when their VLTYP is missing).
-- DEMO_FILE_EVENT and DEMO_FILE_RECEIVED are in demo/010-erp-schema.sql.
-- sqlcmd -I -f 65001 -i 060-demo-procedures.sql
-- =============================================================================
SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
SET NOCOUNT ON;
GO

-- -----------------------------------------------------------------------------
-- DEMO_FILE_FAIL – always fails, to try a failing userDBProcedure (setFile answers
-- 502 with the fileGUID and keeps the file). Not allowed in the demo tenant.
--    EXEC dbo.DEMO_FILE_FAIL @FileGuid = '...';
-- -----------------------------------------------------------------------------
IF OBJECT_ID(N'dbo.DEMO_FILE_FAIL', N'P') IS NULL
    EXEC (N'CREATE PROCEDURE dbo.DEMO_FILE_FAIL AS RETURN 0;');
GO
ALTER PROCEDURE dbo.DEMO_FILE_FAIL
    @FileGuid uniqueidentifier
AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @message nvarchar(200) = CONCAT(N'DEMO_FILE_FAIL rejects file ', @FileGuid);
    THROW 50001, @message, 1;
END;
GO

-- =============================================================================
-- Demo Web API operations (their procedures and WS_OPERATION rows).
-- =============================================================================
-- 1001: subjects; each params object is one filter (nazev: substring, case-insensitive;
--       ico: exact), the rows match any of them; no params: every subject.
IF OBJECT_ID(N'dbo.WS_OP_SUBJECT_SEARCH', N'P') IS NULL
    EXEC (N'CREATE PROCEDURE dbo.WS_OP_SUBJECT_SEARCH AS RETURN 0;');
GO
ALTER PROCEDURE dbo.WS_OP_SUBJECT_SEARCH
    @params nvarchar(max)
AS
BEGIN
    SET NOCOUNT ON;
    IF ISJSON(@params) = 0 OR LEFT(LTRIM(@params), 1) <> N'['
    BEGIN
        THROW 50000, N'params must be a JSON array', 1;
    END;
    SELECT s.ID AS id, s.NAZEV AS nazev, s.ICO AS ico, s.MESTO AS mesto
      FROM dbo.SUBJECT s
     WHERE NOT EXISTS (SELECT 1 FROM OPENJSON(@params))
        OR EXISTS (
            SELECT 1
              FROM OPENJSON(@params) WITH (nazev nvarchar(4000) '$.nazev', ico nvarchar(4000) '$.ico') f
             WHERE (f.nazev IS NULL OR CHARINDEX(LOWER(f.nazev), LOWER(s.NAZEV)) > 0)
               AND (f.ico IS NULL OR s.ICO = f.ico))
     ORDER BY s.ID;
END;
GO

-- 7: accounts whose code starts with kod_uctu (any of the params objects); no params: all.
IF OBJECT_ID(N'dbo.WS_OP_UCET_SEARCH', N'P') IS NULL
    EXEC (N'CREATE PROCEDURE dbo.WS_OP_UCET_SEARCH AS RETURN 0;');
GO
ALTER PROCEDURE dbo.WS_OP_UCET_SEARCH
    @params nvarchar(max)
AS
BEGIN
    SET NOCOUNT ON;
    IF ISJSON(@params) = 0 OR LEFT(LTRIM(@params), 1) <> N'['
    BEGIN
        THROW 50000, N'params must be a JSON array', 1;
    END;
    SELECT u.KOD_UCTU AS kod_uctu, u.NAZEV AS nazev, u.ZUSTATEK AS zustatek
      FROM dbo.UCET u
     WHERE NOT EXISTS (SELECT 1 FROM OPENJSON(@params))
        OR EXISTS (
            SELECT 1
              FROM OPENJSON(@params) WITH (kod_uctu nvarchar(4000) '$.kod_uctu') f
             WHERE f.kod_uctu IS NULL OR LEFT(u.KOD_UCTU, LEN(f.kod_uctu)) = f.kod_uctu)
     ORDER BY u.KOD_UCTU;
END;
GO

-- WS_WAIT: waits @seconds inside the database, holding the caller's session as a slow
-- procedure does. SQL Server: WAITFOR DELAY. Babelfish (the T-SQL engine the tests run on,
-- see docs/sql-server.md "Verified where") has no WAITFOR, not even in a branch it never runs, so each
-- body is dynamic SQL that only its own engine parses; there it sleeps with pg_sleep.
IF OBJECT_ID(N'dbo.WS_WAIT', N'P') IS NULL
    EXEC (N'CREATE PROCEDURE dbo.WS_WAIT AS RETURN 0;');
GO
IF SERVERPROPERTY(N'babelfish') IS NULL
    EXEC (N'ALTER PROCEDURE dbo.WS_WAIT
    @seconds decimal(5, 3)
AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @delay datetime = DATEADD(millisecond, CAST(@seconds * 1000 AS int), CAST(0 AS datetime));
    WAITFOR DELAY @delay;
END;');
ELSE
    EXEC (N'ALTER PROCEDURE dbo.WS_WAIT
    @seconds decimal(5, 3)
AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @slept int;
    SELECT @slept = COUNT(*) FROM (SELECT pg_sleep(CAST(@seconds AS float)) AS s) AS t;
END;');
GO

-- 9001: waits `seconds` and answers how long it slept. One rule on every database (the embedded
-- script has the same): a JSON number from 0 to 60 with at most three fraction digits by its
-- value (1e1, 0.5000 are fine), or a string of one or two digits and at most three fraction digits
-- ("1.5"; no sign, exponent or blank); missing or null is 0; anything else is refused. The value
-- is read with its JSON type (OPENJSON), as JSON_VALUE would read an object or a long string as NULL.
IF OBJECT_ID(N'dbo.WS_OP_SLEEP', N'P') IS NULL
    EXEC (N'CREATE PROCEDURE dbo.WS_OP_SLEEP AS RETURN 0;');
GO
ALTER PROCEDURE dbo.WS_OP_SLEEP
    @params nvarchar(max)
AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @type int = NULL, @text nvarchar(max) = NULL, @seconds decimal(38, 10) = NULL;
    IF ISJSON(@params) = 1 AND LEFT(LTRIM(@params), 1) = N'['
        SELECT @type = [type], @text = [value]
          FROM OPENJSON(@params)
         WHERE [key] = N'0' AND [type] = 5;
    IF @type = 5
    BEGIN
        DECLARE @object nvarchar(max) = @text;
        SELECT @type = NULL, @text = NULL;
        SELECT @type = [type], @text = [value] FROM OPENJSON(@object) WHERE [key] = N'seconds';
    END
    ELSE SET @type = NULL;
    IF @type IS NULL OR @type = 0
        SET @seconds = 0;
    ELSE IF @type = 2
    BEGIN
        -- As a double (a JSON number is one), then at most three fraction digits.
        DECLARE @number float = TRY_CONVERT(float, @text);
        IF @number >= 0 AND @number <= 60 AND ROUND(@number, 3) = @number
            SET @seconds = ROUND(TRY_CONVERT(decimal(38, 10), @number), 3);
    END
    -- (LIKE ignores trailing blanks, LEN(@text + N'x') does not.)
    ELSE IF @type = 1 AND LEN(@text) BETWEEN 1 AND 6 AND LEN(@text + N'x') = LEN(@text) + 1
        AND (@text COLLATE Latin1_General_BIN2 LIKE N'[0-9]'
          OR @text COLLATE Latin1_General_BIN2 LIKE N'[0-9][0-9]'
          OR @text COLLATE Latin1_General_BIN2 LIKE N'[0-9].[0-9]'
          OR @text COLLATE Latin1_General_BIN2 LIKE N'[0-9].[0-9][0-9]'
          OR @text COLLATE Latin1_General_BIN2 LIKE N'[0-9].[0-9][0-9][0-9]'
          OR @text COLLATE Latin1_General_BIN2 LIKE N'[0-9][0-9].[0-9]'
          OR @text COLLATE Latin1_General_BIN2 LIKE N'[0-9][0-9].[0-9][0-9]'
          OR @text COLLATE Latin1_General_BIN2 LIKE N'[0-9][0-9].[0-9][0-9][0-9]')
        SET @seconds = TRY_CONVERT(decimal(38, 10), @text);
    IF @seconds IS NULL OR @seconds < 0 OR @seconds > 60
        THROW 50001, N'seconds must be a number from 0 to 60 with at most three fraction digits', 1;
    DECLARE @wait decimal(5, 3) = @seconds;
    EXEC dbo.WS_WAIT @seconds = @wait;
    SELECT @wait AS slept;
END;
GO

-- 9002: always fails inside the database.
IF OBJECT_ID(N'dbo.WS_OP_FAIL', N'P') IS NULL
    EXEC (N'CREATE PROCEDURE dbo.WS_OP_FAIL AS RETURN 0;');
GO
ALTER PROCEDURE dbo.WS_OP_FAIL
    @params nvarchar(max)
AS
BEGIN
    SET NOCOUNT ON;
    THROW 50002, N'Operation 9002 always fails (demo of a failing procedure)', 1;
END;
GO

-- Missing demo operations are added; existing rows are left as a DBA may have changed them.
-- (INSERT ... WHERE NOT EXISTS rather than MERGE, which Babelfish lacks.)
INSERT INTO dbo.WS_OPERATION (VLTYP, NAZEV, PROCEDURE_NAME, ROW_NAME, AKTIVNI)
SELECT source.VLTYP, source.NAZEV, source.PROCEDURE_NAME, source.ROW_NAME, 1
  FROM (VALUES
    (1001, N'Vyhledání subjektů podle názvu a IČO',  N'dbo.WS_OP_SUBJECT_SEARCH', N'Subject'),
    (7,    N'Účty podle začátku kódu',               N'dbo.WS_OP_UCET_SEARCH',    N'Ucet'),
    (9001, N'Čekání (zkouška asynchronního volání)', N'dbo.WS_OP_SLEEP',          N'Sleep'),
    (9002, N'Vždy selže v databázi',                 N'dbo.WS_OP_FAIL',           N'Fail')
  ) AS source (VLTYP, NAZEV, PROCEDURE_NAME, ROW_NAME)
 WHERE NOT EXISTS (SELECT 1 FROM dbo.WS_OPERATION AS target WHERE target.VLTYP = source.VLTYP);
GO
