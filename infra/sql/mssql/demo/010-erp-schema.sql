-- =============================================================================
-- DEMO ONLY: what the ERP owns, as the demo lays it out (npm run db:apply -- --demo; the local
-- stack). On a tenant's database these objects are the ERP's own: db:apply without --demo never
-- runs this script (docs/sql-server.md, "What the ERP owns and what the service owns").
-- Demo ERP database – schema for SQL Server (2016+; also runs on Babelfish).
--
-- Same objects and column names as infra/sql/embedded/010-erp-schema.sql (PGlite).
-- IDEMPOTENT: every table (with its indexes) and the view are created only when missing, procedures are
-- created as a stub when missing and then ALTERed (permissions on them are kept),
-- the view is created only when missing (never replaced), so the script can be run any number of times
-- (sqlcmd -I -f 65001 -i 010-erp-schema.sql, SSMS, Azure Data Studio; GO = batch
-- separator). The file is UTF-8 without BOM: sqlcmd needs -f 65001.
--
-- Flags are smallint with values 1 (yes), 0 (no) and -1 (undefined / blocked).
-- =============================================================================
SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
SET NOCOUNT ON;
GO

-- -----------------------------------------------------------------------------
-- 1. SUBJECT – business partners (customers / suppliers)
-- -----------------------------------------------------------------------------
IF OBJECT_ID(N'dbo.SUBJECT', N'U') IS NULL
BEGIN
    CREATE TABLE dbo.SUBJECT (
        ID             int            NOT NULL,
        NAZEV          nvarchar(100)  NOT NULL,
        ICO            nvarchar(8)    NULL,
        DIC            nvarchar(12)   NULL,
        ULICE          nvarchar(100)  NULL,
        MESTO          nvarchar(60)   NULL,
        PSC            nvarchar(6)    NULL,
        STAT           nchar(2)       NULL,
        EMAIL          nvarchar(100)  NULL,
        TELEFON        nvarchar(30)   NULL,
        WEBHOOK_URL    nvarchar(500)  NULL,
        SECRET_WEBHOOK nvarchar(200)  NULL,
        AKTIVNI        smallint       NOT NULL CONSTRAINT DF_SUBJECT_AKTIVNI DEFAULT (1),
        DATUM_ZALOZENI datetime2(0)   NULL,
        CONSTRAINT PK_SUBJECT PRIMARY KEY (ID),
        CONSTRAINT CK_SUBJECT_AKTIVNI CHECK (AKTIVNI IN (-1, 0, 1))
    );
END;
GO

-- -----------------------------------------------------------------------------
-- 2. UCET – chart of accounts (Czech "účtový rozvrh")
--    TYP: A = aktivní, P = pasivní, N = nákladový, V = výnosový
-- -----------------------------------------------------------------------------
IF OBJECT_ID(N'dbo.UCET', N'U') IS NULL
BEGIN
    CREATE TABLE dbo.UCET (
        KOD_UCTU nvarchar(10)   NOT NULL,
        NAZEV    nvarchar(100)  NOT NULL,
        TYP      nchar(1)       NOT NULL,
        ZUSTATEK decimal(15,2)  NULL,
        AKTIVNI  smallint       NOT NULL CONSTRAINT DF_UCET_AKTIVNI DEFAULT (1),
        CONSTRAINT PK_UCET PRIMARY KEY (KOD_UCTU),
        CONSTRAINT CK_UCET_TYP CHECK (TYP IN (N'A', N'P', N'N', N'V')),
        CONSTRAINT CK_UCET_AKTIVNI CHECK (AKTIVNI IN (-1, 0, 1))
    );
END;
GO

-- -----------------------------------------------------------------------------
-- 3. SVCDOC – document store (files). The service adds no column to it: the ETag's SHA-256 is
--    computed from CONTENT when a file is read (HASHBYTES).
-- -----------------------------------------------------------------------------
IF OBJECT_ID(N'dbo.SVCDOC', N'U') IS NULL
BEGIN
    CREATE TABLE dbo.SVCDOC (
        FILEGUID     uniqueidentifier NOT NULL CONSTRAINT DF_SVCDOC_FILEGUID DEFAULT (NEWID()),
        FILENAME     nvarchar(260)    NOT NULL,
        CONTENT_TYPE nvarchar(200)    NULL,
        SIZE_BYTES   bigint           NOT NULL,
        CONTENT      varbinary(max)   NOT NULL,
        CREATED_AT   datetime2(3)     NOT NULL CONSTRAINT DF_SVCDOC_CREATED_AT DEFAULT (SYSUTCDATETIME()),
        CONSTRAINT PK_SVCDOC PRIMARY KEY (FILEGUID)
    );
END;
GO

-- -----------------------------------------------------------------------------
-- 4. DOKUMENT – accounting documents
--    TYP_DOKLADU: FV, FP, ZF, DD, OD, PPD, VPD, ID, BV
--    UHRAZENO: 1 = uhrazeno, 0 = neuhrazeno, -1 = částečně
--    STORNO:   1 = stornováno, 0 = platný, -1 = storno čeká na schválení
--    DOKUMENTFILEGUID -> dbo.SVCDOC.FILEGUID (no FK, like the ERP itself)
-- -----------------------------------------------------------------------------
IF OBJECT_ID(N'dbo.DOKUMENT', N'U') IS NULL
BEGIN
    CREATE TABLE dbo.DOKUMENT (
        ID                int              NOT NULL,
        CISLO             nvarchar(20)     NOT NULL,
        TYP_DOKLADU       nvarchar(3)      NOT NULL,
        SUBJECT_ID        int              NULL,
        DATUM_VYSTAVENI   datetime2(0)     NOT NULL,
        DATUM_SPLATNOSTI  datetime2(0)     NULL,
        DATUM_UZP         date             NULL,
        CASTKA_ZAKLAD     decimal(15,2)    NOT NULL,
        CASTKA_DPH        decimal(15,2)    NOT NULL,
        CASTKA_CELKEM     decimal(15,2)    NOT NULL,
        MENA              nchar(3)         NOT NULL CONSTRAINT DF_DOKUMENT_MENA DEFAULT (N'CZK'),
        VARIABILNI_SYMBOL nvarchar(10)     NULL,
        POPIS             nvarchar(200)    NULL,
        POZNAMKA          nvarchar(400)    NULL,
        UHRAZENO          smallint         NOT NULL CONSTRAINT DF_DOKUMENT_UHRAZENO DEFAULT (0),
        STORNO            smallint         NOT NULL CONSTRAINT DF_DOKUMENT_STORNO DEFAULT (0),
        DOKUMENTFILEGUID  uniqueidentifier NULL,
        VYTVORENO         datetime2(0)     NOT NULL,
        CONSTRAINT PK_DOKUMENT PRIMARY KEY (ID),
        CONSTRAINT CK_DOKUMENT_UHRAZENO CHECK (UHRAZENO IN (-1, 0, 1)),
        CONSTRAINT CK_DOKUMENT_STORNO CHECK (STORNO IN (-1, 0, 1))
    );
    CREATE NONCLUSTERED INDEX IX_DOKUMENT_SUBJECT_ID ON dbo.DOKUMENT (SUBJECT_ID);
    CREATE NONCLUSTERED INDEX IX_DOKUMENT_DATUM_VYSTAVENI ON dbo.DOKUMENT (DATUM_VYSTAVENI);
    CREATE NONCLUSTERED INDEX IX_DOKUMENT_DOKUMENTFILEGUID ON dbo.DOKUMENT (DOKUMENTFILEGUID);
END;
GO

-- The indexes come with the table only: the demo never adds one to a DOKUMENT the ERP already has.
-- Plain (not filtered) indexes on purpose: filtered indexes make DML fail for sessions with
-- QUOTED_IDENTIFIER OFF (e.g. sqlcmd without -I).

-- -----------------------------------------------------------------------------
-- 5. V_DOKUMENT_SOUBOR – documents together with their stored file
-- -----------------------------------------------------------------------------
-- Created only when missing: a view of that name is the ERP's, and never replaced.
IF OBJECT_ID(N'dbo.V_DOKUMENT_SOUBOR', N'V') IS NULL
    EXEC (N'CREATE VIEW dbo.V_DOKUMENT_SOUBOR
AS
SELECT
    d.ID               AS DOKUMENT_ID,
    d.CISLO            AS CISLO,
    d.TYP_DOKLADU      AS TYP_DOKLADU,
    d.DATUM_VYSTAVENI  AS DATUM_VYSTAVENI,
    d.DOKUMENTFILEGUID AS DOKUMENTFILEGUID,
    s.FILENAME         AS FILENAME,
    s.CONTENT_TYPE     AS CONTENT_TYPE,
    s.SIZE_BYTES       AS SIZE_BYTES
FROM dbo.DOKUMENT AS d
INNER JOIN dbo.SVCDOC AS s ON s.FILEGUID = d.DOKUMENTFILEGUID;');
GO

-- -----------------------------------------------------------------------------
-- 6. DEMO_FILE_EVENT + procedure DEMO_FILE_RECEIVED
--    EXEC dbo.DEMO_FILE_RECEIVED @FileGuid = '...';
-- -----------------------------------------------------------------------------
IF OBJECT_ID(N'dbo.DEMO_FILE_EVENT', N'U') IS NULL
BEGIN
    CREATE TABLE dbo.DEMO_FILE_EVENT (
        ID          int IDENTITY(1, 1) NOT NULL,
        FILEGUID    uniqueidentifier   NOT NULL,
        RECEIVED_AT datetime2(3)       NULL CONSTRAINT DF_DEMO_FILE_EVENT_RECEIVED_AT DEFAULT (SYSUTCDATETIME()),
        CONSTRAINT PK_DEMO_FILE_EVENT PRIMARY KEY (ID)
    );
END;
GO

IF OBJECT_ID(N'dbo.DEMO_FILE_RECEIVED', N'P') IS NULL
    EXEC (N'CREATE PROCEDURE dbo.DEMO_FILE_RECEIVED AS RETURN 0;');
GO
ALTER PROCEDURE dbo.DEMO_FILE_RECEIVED
    @FileGuid uniqueidentifier
AS
BEGIN
    SET NOCOUNT ON;
    INSERT INTO dbo.DEMO_FILE_EVENT (FILEGUID) VALUES (@FileGuid);
END;
GO

-- -----------------------------------------------------------------------------
-- 7. WS_APPLICATION – an ERP's own register of Web API applications (holds secrets, NEVER
--    served by the API). DEMO ONLY: the demo tenant's applications are in its registry entry (a
--    real ERP's database has no such table); this one stands for the ERP that keeps a register of
--    its own, which a tenant may name instead ("applications": {"erpTable": "dbo.WS_APPLICATION"}).
-- -----------------------------------------------------------------------------
IF OBJECT_ID(N'dbo.WS_APPLICATION', N'U') IS NULL
BEGIN
    CREATE TABLE dbo.WS_APPLICATION (
        ID         int            NOT NULL,
        NAZEV      nvarchar(100)  NULL,
        API_KEY    nvarchar(100)  NOT NULL,
        API_HASH   nvarchar(200)  NOT NULL,
        AKTIVNI    smallint       NOT NULL CONSTRAINT DF_WS_APPLICATION_AKTIVNI DEFAULT (1),
        CREATED_AT datetime2(0)   NULL,
        CONSTRAINT PK_WS_APPLICATION PRIMARY KEY (ID),
        CONSTRAINT UQ_WS_APPLICATION_API_KEY UNIQUE (API_KEY)
    );
END;
GO
