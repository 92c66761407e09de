-- =============================================================================
-- Document store (setFile / getFile) – SQL Server. IDEMPOTENT (stub + ALTER PROCEDURE).
-- SVCDOC, DEMO_FILE_EVENT and DEMO_FILE_RECEIVED are in 010-schema.sql.
-- sqlcmd -I -f 65001 -i 030-files.sql
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
