-- =============================================================================
-- The local T-SQL stack's ERP stand-in: what a real ERP's database has of its own beside the
-- objects the demo lays out (infra/sql/mssql/demo/010-erp-schema.sql, 020-erp-data.sql), so that
-- the service's objects are added, and every T-SQL test runs, on a database laid out as a
-- tenant's: the ERP's own definition of V_DOKUMENT_SOUBOR (written another way, the same columns
-- and rows), columns of the ERP's own in SVCDOC and WS_APPLICATION, and a table, rows and a
-- procedure the service knows nothing of. Run once, on a new database, before the service's
-- scripts (infra/local/tsql-engine.ts); never by npm run db:apply.
-- =============================================================================
SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
SET NOCOUNT ON;
GO
DROP VIEW IF EXISTS dbo.V_DOKUMENT_SOUBOR;
GO
-- The ERP's definition: from the file side, with a comment of its own.
CREATE VIEW dbo.V_DOKUMENT_SOUBOR
AS
-- ERP: doklady s přiloženým souborem (definice ERP)
SELECT d.ID AS DOKUMENT_ID, d.CISLO, d.TYP_DOKLADU, d.DATUM_VYSTAVENI, d.DOKUMENTFILEGUID,
       f.FILENAME, f.CONTENT_TYPE, f.SIZE_BYTES
  FROM dbo.SVCDOC AS f
  JOIN dbo.DOKUMENT AS d ON d.DOKUMENTFILEGUID = f.FILEGUID;
GO
ALTER TABLE dbo.SVCDOC ADD ERP_ARCHIV smallint NULL CONSTRAINT DF_SVCDOC_ERP_ARCHIV DEFAULT (0);
GO
ALTER TABLE dbo.WS_APPLICATION ADD ERP_POZNAMKA nvarchar(200) NULL;
GO
UPDATE dbo.WS_APPLICATION SET ERP_POZNAMKA = N'vedeno v ERP' WHERE ID = 1;
GO
CREATE TABLE dbo.ERP_AUDIT (
    ID        int           NOT NULL,
    UDALOST   nvarchar(100) NOT NULL,
    KDY       datetime2(0)  NOT NULL,
    CONSTRAINT PK_ERP_AUDIT PRIMARY KEY (ID)
);
GO
INSERT INTO dbo.ERP_AUDIT (ID, UDALOST, KDY) VALUES
    (1, N'Založení databáze', '2023-01-02T08:00:00'),
    (2, N'Uzávěrka roku 2023', '2024-01-31T17:30:00');
GO
CREATE PROCEDURE dbo.ERP_UZAVERKA @Rok int
AS
BEGIN
    SET NOCOUNT ON;
    INSERT INTO dbo.ERP_AUDIT (ID, UDALOST, KDY)
    SELECT ISNULL(MAX(ID), 0) + 1, CONCAT(N'Uzávěrka roku ', @Rok), SYSUTCDATETIME() FROM dbo.ERP_AUDIT;
END;
GO
