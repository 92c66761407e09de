/**
 * A tenant's database as a real ERP has it before the service (CONTRACT.md section 7), for the
 * T-SQL tests of db:apply and of the service on it: the seed's objects only, its own SUBJECT,
 * DOKUMENT, SVCDOC (no column of the service's, one of its own), its own V_DOKUMENT_SOUBOR (another
 * definition than the demo's), rows in every table, and a table, a view and a procedure the
 * service knows nothing of. No register of Web API applications: a real ERP's database has none.
 */
export const REAL_ERP_LAYOUT: readonly string[] = [
  `CREATE TABLE dbo.SUBJECT (ID int NOT NULL PRIMARY KEY, NAZEV nvarchar(100) NOT NULL, ICO nvarchar(8) NULL,
     WEBHOOK_URL nvarchar(500) NULL, SECRET_WEBHOOK nvarchar(200) NULL, ERP_KATEGORIE nvarchar(20) NULL)`,
  `CREATE TABLE dbo.DOKUMENT (ID int NOT NULL PRIMARY KEY, CISLO nvarchar(20) NOT NULL, SUBJECT_ID int NULL,
     DOKUMENTFILEGUID uniqueidentifier NULL, ERP_STREDISKO nvarchar(10) NULL)`,
  `CREATE TABLE dbo.SVCDOC (FILEGUID uniqueidentifier NOT NULL PRIMARY KEY, FILENAME nvarchar(260) NOT NULL,
     CONTENT_TYPE nvarchar(200) NULL, SIZE_BYTES bigint NOT NULL, CONTENT varbinary(max) NOT NULL,
     ERP_ARCHIV smallint NULL)`,
  `CREATE TABLE dbo.ERP_AUDIT (ID int NOT NULL PRIMARY KEY, UDALOST nvarchar(100) NOT NULL)`,
  `CREATE VIEW dbo.V_DOKUMENT_SOUBOR AS
     SELECT d.DOKUMENTFILEGUID, f.FILENAME, d.CISLO AS ERP_CISLO FROM dbo.DOKUMENT AS d
     LEFT JOIN dbo.SVCDOC AS f ON f.FILEGUID = d.DOKUMENTFILEGUID WHERE d.ERP_STREDISKO IS NOT NULL`,
  `CREATE VIEW dbo.ERP_PREHLED AS SELECT s.NAZEV, COUNT(*) AS POCET FROM dbo.SUBJECT AS s GROUP BY s.NAZEV`,
  `CREATE PROCEDURE dbo.ERP_ZAPIS @Udalost nvarchar(100) AS
     BEGIN SET NOCOUNT ON; INSERT INTO dbo.ERP_AUDIT (ID, UDALOST) SELECT ISNULL(MAX(ID), 0) + 1, @Udalost FROM dbo.ERP_AUDIT; END`,
  `INSERT INTO dbo.SUBJECT VALUES (1, N'Žluťoučký kůň s.r.o.', N'12345678', NULL, NULL, N'A'),
     (2, N'Beta a.s.', NULL, N'https://example.invalid/hook', N'whsec_x', NULL)`,
  `INSERT INTO dbo.SVCDOC VALUES ('11111111-2222-3333-4444-555555555555', N'faktura.xml', N'application/xml', 3, 0x3C613E, 1)`,
  `INSERT INTO dbo.DOKUMENT VALUES (10, N'FV-1', 1, '11111111-2222-3333-4444-555555555555', N'S1'), (11, N'FV-2', 2, NULL, NULL)`,
  `INSERT INTO dbo.ERP_AUDIT VALUES (1, N'založeno')`,
];

/**
 * An ERP's own register of Web API applications, in the one layout the service reads
 * (`WS_APPLICATION`: `ID`, `API_KEY`, `API_HASH`, `AKTIVNI`), with a column of the ERP's own.
 */
export const ERP_APPLICATION_REGISTER: readonly string[] = [
  `CREATE TABLE dbo.WS_APPLICATION (ID int NOT NULL PRIMARY KEY, NAZEV nvarchar(100) NULL,
     API_KEY nvarchar(100) NOT NULL, API_HASH nvarchar(200) NOT NULL, AKTIVNI smallint NOT NULL, ERP_POZNAMKA nvarchar(50) NULL)`,
  `INSERT INTO dbo.WS_APPLICATION VALUES (7, N'ERP app', N'erp-key', N'erp-hash', 1, N'vlastní')`,
];

/**
 * A procedure of the ERP's that a tenant serves as a Web API operation (one parameter, the params
 * as JSON; its first result set the answer's rows).
 */
export const ERP_OPERATION_PROCEDURE = `CREATE PROCEDURE dbo.ERP_PARTNERI @params nvarchar(max) AS
  BEGIN
    SET NOCOUNT ON;
    SELECT s.ID AS id, s.NAZEV AS nazev FROM dbo.SUBJECT AS s
     WHERE NOT EXISTS (SELECT 1 FROM OPENJSON(@params))
        OR EXISTS (SELECT 1 FROM OPENJSON(@params) WITH (ico nvarchar(20) '$.ico') AS f WHERE f.ico IS NULL OR s.ICO = f.ico)
     ORDER BY s.ID;
  END`;
