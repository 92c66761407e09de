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

-- 2001: a writing operation (CONTRACT 5a: what Idempotency-Key makes safe to retry): creates a
-- DOKUMENT of one params object {"cislo": …, "subject_id": …, "castka": …} and answers its ID.
-- The other columns by the demo's defaults: an issued invoice (FV) of now (UTC), due in 14 days,
-- CASTKA_CELKEM the base (no VAT), CZK, unpaid. One rule on every database (the embedded script
-- has the same): cislo a text of 1 to 20 characters; subject_id a whole number (a JSON number, or
-- its digits as text, which is all XML sends) that is a SUBJECT's ID; castka a JSON number, or a
-- decimal number as text (-?digits[.digits]), with at most two decimal places and less than
-- 10 000 000 000 000 in absolute value. A bad or missing one is refused with THROW 50010..50013,
-- in words the caller gets (120).
-- The ID is the next after the highest, taken under an application lock its transaction owns
-- (sp_getapplock: the T-SQL engine ignores UPDLOCK/HOLDLOCK), so concurrent calls never take one
-- ID twice; inside the service's transaction the lock is held until that commits. Its own
-- BEGIN/COMMIT TRANSACTION balance, as a procedure's must (docs/sql-server.md, "The transaction
-- rule for ERP procedures").
IF OBJECT_ID(N'dbo.WS_OP_DOKUMENT_CREATE', N'P') IS NULL
    EXEC (N'CREATE PROCEDURE dbo.WS_OP_DOKUMENT_CREATE AS RETURN 0;');
GO
ALTER PROCEDURE dbo.WS_OP_DOKUMENT_CREATE
    @params nvarchar(max)
AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @object nvarchar(max) = NULL, @count int = 0;
    IF ISJSON(@params) = 1 AND LEFT(LTRIM(@params), 1) = N'['
        SELECT @count = COUNT(*),
               @object = MAX(CASE WHEN [key] = N'0' AND [type] = 5 THEN [value] END)
          FROM OPENJSON(@params);
    IF @count <> 1 OR @object IS NULL
        THROW 50010, N'2001 takes one params object: {"cislo": …, "subject_id": …, "castka": …}', 1;

    -- Each value with its JSON type (1 string, 2 number), as JSON_VALUE would read an object or a long string as NULL.
    DECLARE @cisloType int, @cislo nvarchar(max), @subjectType int, @subjectText nvarchar(max),
            @castkaType int, @castkaText nvarchar(max);
    SELECT @cisloType = [type], @cislo = [value] FROM OPENJSON(@object) WHERE [key] = N'cislo';
    SELECT @subjectType = [type], @subjectText = [value] FROM OPENJSON(@object) WHERE [key] = N'subject_id';
    SELECT @castkaType = [type], @castkaText = [value] FROM OPENJSON(@object) WHERE [key] = N'castka';

    -- (LEN ignores trailing blanks, LEN(@cislo + N'x') does not.)
    IF @cisloType IS NULL OR @cisloType <> 1 OR LEN(@cislo + N'x') - 1 NOT BETWEEN 1 AND 20
        THROW 50011, N'cislo must be a text of 1 to 20 characters', 1;

    -- A number read by its value (5.0 is 5), digits as text by themselves; within int.
    DECLARE @subjectValue decimal(38, 10) = CASE
        WHEN @subjectType = 2 THEN COALESCE(TRY_CONVERT(decimal(38, 10), @subjectText),
                                            TRY_CONVERT(decimal(38, 10), TRY_CONVERT(float, @subjectText)))
        WHEN @subjectType = 1 AND LEN(@subjectText) BETWEEN 1 AND 10
             AND @subjectText COLLATE Latin1_General_BIN2 NOT LIKE N'%[^0-9]%'
            THEN TRY_CONVERT(decimal(38, 10), @subjectText) END;
    DECLARE @subjectId int = CASE WHEN @subjectValue = ROUND(@subjectValue, 0) AND @subjectValue BETWEEN 1 AND 2147483647
                                  THEN CONVERT(int, @subjectValue) END;
    IF @subjectId IS NULL
        THROW 50012, N'subject_id must be the ID of a subject (a whole number)', 1;
    IF NOT EXISTS (SELECT 1 FROM dbo.SUBJECT WHERE ID = @subjectId)
    BEGIN
        DECLARE @noSubject nvarchar(200) = CONCAT(N'subject_id ', @subjectId, N' is not a subject (no SUBJECT of that ID)');
        THROW 50012, @noSubject, 1;
    END;

    -- As text: digits, at most one point between digits, an optional minus before them.
    DECLARE @castkaDigits nvarchar(max) = CASE WHEN LEFT(@castkaText, 1) = N'-' THEN STUFF(@castkaText, 1, 1, N'') ELSE @castkaText END;
    DECLARE @castkaValue decimal(38, 10) = CASE
        WHEN @castkaType = 2 THEN COALESCE(TRY_CONVERT(decimal(38, 10), @castkaText),
                                           TRY_CONVERT(decimal(38, 10), TRY_CONVERT(float, @castkaText)))
        WHEN @castkaType = 1 AND @castkaDigits COLLATE Latin1_General_BIN2 NOT LIKE N'%[^0-9.]%'
             AND @castkaDigits COLLATE Latin1_General_BIN2 LIKE N'[0-9]%'
             AND @castkaDigits COLLATE Latin1_General_BIN2 LIKE N'%[0-9]'
            THEN TRY_CONVERT(decimal(38, 10), @castkaText) END;
    IF @castkaValue IS NULL OR @castkaValue <> ROUND(@castkaValue, 2) OR ABS(@castkaValue) >= 10000000000000
        THROW 50013, N'castka must be a number with at most two decimal places, less than 10000000000000 in absolute value', 1;
    DECLARE @castka decimal(15, 2) = CONVERT(decimal(15, 2), @castkaValue);

    DECLARE @id int, @now datetime2(0) = CONVERT(datetime2(0), SYSUTCDATETIME()), @lock int;
    -- Balanced on every path: a ROLLBACK here would end the service's transaction too.
    BEGIN TRANSACTION;
    EXEC @lock = sp_getapplock @Resource = N'demo DOKUMENT.ID', @LockMode = N'Exclusive',
        @LockOwner = N'Transaction', @LockTimeout = 10000;
    IF @lock >= 0
    BEGIN
        SELECT @id = ISNULL(MAX(ID), 0) + 1 FROM dbo.DOKUMENT;
        INSERT INTO dbo.DOKUMENT (ID, CISLO, TYP_DOKLADU, SUBJECT_ID, DATUM_VYSTAVENI, DATUM_SPLATNOSTI, DATUM_UZP,
            CASTKA_ZAKLAD, CASTKA_DPH, CASTKA_CELKEM, POPIS, VYTVORENO)
        VALUES (@id, @cislo, N'FV', @subjectId, @now, DATEADD(day, 14, @now), CONVERT(date, @now),
            @castka, 0, @castka, N'Vytvořeno operací Web API 2001', @now);
    END;
    COMMIT TRANSACTION;
    IF @lock < 0
        THROW 50014, N'Another call has been creating a document for 10 s: try again', 1;
    SELECT @id AS id;
END;
GO

-- 2002: a procedure that ends its caller's transaction (CONTRACT 5a), to show what the service
-- answers then: it writes a DOKUMENT in a transaction of its own and rolls it back without a save
-- point. Called alone that is harmless (nothing written, no rows answered); called inside the
-- service's transaction, as every Web API operation is, its ROLLBACK ends that transaction too, and
-- the server answers error 266 (the transaction count differs after the procedure): 120, the call
-- journaled as failed (docs/sql-server.md, "The transaction rule for ERP procedures").
IF OBJECT_ID(N'dbo.WS_OP_END_TRANSACTION', N'P') IS NULL
    EXEC (N'CREATE PROCEDURE dbo.WS_OP_END_TRANSACTION AS RETURN 0;');
GO
ALTER PROCEDURE dbo.WS_OP_END_TRANSACTION
    @params nvarchar(max)
AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @now datetime2(0) = CONVERT(datetime2(0), SYSUTCDATETIME());
    BEGIN TRANSACTION;
    INSERT INTO dbo.DOKUMENT (ID, CISLO, TYP_DOKLADU, DATUM_VYSTAVENI, CASTKA_ZAKLAD, CASTKA_DPH, CASTKA_CELKEM,
        POPIS, VYTVORENO)
    SELECT ISNULL(MAX(ID), 0) + 1, N'KONEC', N'ID', @now, 0, 0, 0, N'Operace Web API 2002 (vždy vrácena)', @now
      FROM dbo.DOKUMENT;
    -- The mistake this operation shows: no SAVE TRANSACTION, so ROLLBACK ends every open level.
    ROLLBACK TRANSACTION;
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
    (9002, N'Vždy selže v databázi',                 N'dbo.WS_OP_FAIL',           N'Fail'),
    (2001, N'Založení dokladu',                      N'dbo.WS_OP_DOKUMENT_CREATE', N'Dokument'),
    (2002, N'Ukončí transakci volajícího (ukázka chyby)', N'dbo.WS_OP_END_TRANSACTION', N'Konec')
  ) AS source (VLTYP, NAZEV, PROCEDURE_NAME, ROW_NAME)
 WHERE NOT EXISTS (SELECT 1 FROM dbo.WS_OPERATION AS target WHERE target.VLTYP = source.VLTYP);
GO
