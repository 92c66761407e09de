-- =============================================================================
-- Demo ERP database – schema for the embedded PostgreSQL (PGlite).
--
-- Loaded with db.exec() into a FRESH database, in file-name order (010-erp-schema.sql,
-- 020-erp-data.sql, then the service's scripts and the demo's). Each number is the same script's
-- as under infra/sql/mssql/ (demo/ or service/): the same capability in both dialects.
--
-- Conventions (mirror SQL Server names 1:1, see infra/sql/mssql/demo/010-erp-schema.sql):
--   * everything lives in schema dbo,
--   * every identifier is QUOTED and UPPER-CASE (dbo."SUBJECT"."NAZEV"),
--   * date-times are timestamp without time zone (SQL Server datetime2),
--   * flags are smallint with values 1 (yes), 0 (no) and -1 (undefined / blocked).
-- =============================================================================

CREATE SCHEMA dbo;

-- -----------------------------------------------------------------------------
-- 1. SUBJECT – business partners (customers / suppliers)
-- -----------------------------------------------------------------------------
CREATE TABLE dbo."SUBJECT" (
    "ID"             int           NOT NULL,
    "NAZEV"          varchar(100)  NOT NULL,
    "ICO"            varchar(8)    NULL,
    "DIC"            varchar(12)   NULL,
    "ULICE"          varchar(100)  NULL,
    "MESTO"          varchar(60)   NULL,
    "PSC"            varchar(6)    NULL,
    "STAT"           char(2)       NULL,
    "EMAIL"          varchar(100)  NULL,
    "TELEFON"        varchar(30)   NULL,
    "WEBHOOK_URL"    varchar(500)  NULL,
    "SECRET_WEBHOOK" varchar(200)  NULL,
    "AKTIVNI"        smallint      NOT NULL DEFAULT 1,
    "DATUM_ZALOZENI" timestamp(0) without time zone NULL,
    CONSTRAINT "PK_SUBJECT" PRIMARY KEY ("ID"),
    CONSTRAINT "CK_SUBJECT_AKTIVNI" CHECK ("AKTIVNI" IN (-1, 0, 1))
);
COMMENT ON TABLE dbo."SUBJECT" IS 'Obchodní partneři (odběratelé a dodavatelé).';
COMMENT ON COLUMN dbo."SUBJECT"."SECRET_WEBHOOK" IS 'Sdílené tajemství pro podpis webhooků partnera (citlivé).';
COMMENT ON COLUMN dbo."SUBJECT"."AKTIVNI" IS '1 = aktivní, 0 = neaktivní, -1 = blokovaný.';

-- -----------------------------------------------------------------------------
-- 2. UCET – chart of accounts (Czech "účtový rozvrh")
-- -----------------------------------------------------------------------------
CREATE TABLE dbo."UCET" (
    "KOD_UCTU" varchar(10)   NOT NULL,
    "NAZEV"    varchar(100)  NOT NULL,
    "TYP"      char(1)       NOT NULL,
    "ZUSTATEK" numeric(15,2) NULL,
    "AKTIVNI"  smallint      NOT NULL DEFAULT 1,
    CONSTRAINT "PK_UCET" PRIMARY KEY ("KOD_UCTU"),
    CONSTRAINT "CK_UCET_TYP" CHECK ("TYP" IN ('A', 'P', 'N', 'V')),
    CONSTRAINT "CK_UCET_AKTIVNI" CHECK ("AKTIVNI" IN (-1, 0, 1))
);
COMMENT ON TABLE dbo."UCET" IS 'Účtový rozvrh. TYP: A = aktivní, P = pasivní, N = nákladový, V = výnosový.';

-- -----------------------------------------------------------------------------
-- 3. SVCDOC – document store (files)
-- -----------------------------------------------------------------------------
CREATE TABLE dbo."SVCDOC" (
    "FILEGUID"     uuid          NOT NULL DEFAULT gen_random_uuid(),
    "FILENAME"     varchar(260)  NOT NULL,
    "CONTENT_TYPE" varchar(200)  NULL,
    "SIZE_BYTES"   bigint        NOT NULL,
    "CONTENT"      bytea         NOT NULL,
    "CREATED_AT"   timestamp(3) without time zone NOT NULL DEFAULT (now() AT TIME ZONE 'utc'),
    CONSTRAINT "PK_SVCDOC" PRIMARY KEY ("FILEGUID")
);
COMMENT ON TABLE dbo."SVCDOC" IS 'Úložiště dokumentů (souborů).';

-- -----------------------------------------------------------------------------
-- 4. DOKUMENT – accounting documents (invoices, cash vouchers, ...)
-- -----------------------------------------------------------------------------
CREATE TABLE dbo."DOKUMENT" (
    "ID"                int           NOT NULL,
    "CISLO"             varchar(20)   NOT NULL,
    "TYP_DOKLADU"       varchar(3)    NOT NULL,
    "SUBJECT_ID"        int           NULL,
    "DATUM_VYSTAVENI"   timestamp(0) without time zone NOT NULL,
    "DATUM_SPLATNOSTI"  timestamp(0) without time zone NULL,
    "DATUM_UZP"         date          NULL,
    "CASTKA_ZAKLAD"     numeric(15,2) NOT NULL,
    "CASTKA_DPH"        numeric(15,2) NOT NULL,
    "CASTKA_CELKEM"     numeric(15,2) NOT NULL,
    "MENA"              char(3)       NOT NULL DEFAULT 'CZK',
    "VARIABILNI_SYMBOL" varchar(10)   NULL,
    "POPIS"             varchar(200)  NULL,
    "POZNAMKA"          varchar(400)  NULL,
    "UHRAZENO"          smallint      NOT NULL DEFAULT 0,
    "STORNO"            smallint      NOT NULL DEFAULT 0,
    "DOKUMENTFILEGUID"  uuid          NULL,
    "VYTVORENO"         timestamp(0) without time zone NOT NULL,
    CONSTRAINT "PK_DOKUMENT" PRIMARY KEY ("ID"),
    CONSTRAINT "CK_DOKUMENT_UHRAZENO" CHECK ("UHRAZENO" IN (-1, 0, 1)),
    CONSTRAINT "CK_DOKUMENT_STORNO" CHECK ("STORNO" IN (-1, 0, 1))
);
COMMENT ON TABLE dbo."DOKUMENT" IS 'Účetní doklady. TYP_DOKLADU: FV, FP, ZF, DD, OD, PPD, VPD, ID, BV. UHRAZENO: 1 = uhrazeno, 0 = neuhrazeno, -1 = částečně. STORNO: 1 = stornováno, 0 = ne, -1 = storno čeká na schválení.';
COMMENT ON COLUMN dbo."DOKUMENT"."DOKUMENTFILEGUID" IS 'Odkaz na soubor v dbo.SVCDOC (FILEGUID).';

CREATE INDEX "IX_DOKUMENT_SUBJECT_ID" ON dbo."DOKUMENT" ("SUBJECT_ID");
CREATE INDEX "IX_DOKUMENT_DATUM_VYSTAVENI" ON dbo."DOKUMENT" ("DATUM_VYSTAVENI");
CREATE INDEX "IX_DOKUMENT_DOKUMENTFILEGUID" ON dbo."DOKUMENT" ("DOKUMENTFILEGUID")
    WHERE "DOKUMENTFILEGUID" IS NOT NULL;

-- -----------------------------------------------------------------------------
-- 5. V_DOKUMENT_SOUBOR – documents together with their stored file
-- -----------------------------------------------------------------------------
CREATE VIEW dbo."V_DOKUMENT_SOUBOR" AS
SELECT
    d."ID"               AS "DOKUMENT_ID",
    d."CISLO"            AS "CISLO",
    d."TYP_DOKLADU"      AS "TYP_DOKLADU",
    d."DATUM_VYSTAVENI"  AS "DATUM_VYSTAVENI",
    d."DOKUMENTFILEGUID" AS "DOKUMENTFILEGUID",
    s."FILENAME"         AS "FILENAME",
    s."CONTENT_TYPE"     AS "CONTENT_TYPE",
    s."SIZE_BYTES"       AS "SIZE_BYTES"
FROM dbo."DOKUMENT" d
INNER JOIN dbo."SVCDOC" s ON s."FILEGUID" = d."DOKUMENTFILEGUID";
COMMENT ON VIEW dbo."V_DOKUMENT_SOUBOR" IS 'Doklady, jejichž soubor je uložen v dbo.SVCDOC.';

-- -----------------------------------------------------------------------------
-- 6. DEMO_FILE_EVENT + procedure DEMO_FILE_RECEIVED
--    CALL dbo."DEMO_FILE_RECEIVED"($1)
-- -----------------------------------------------------------------------------
CREATE TABLE dbo."DEMO_FILE_EVENT" (
    "ID"          int GENERATED ALWAYS AS IDENTITY,
    "FILEGUID"    uuid NOT NULL,
    "RECEIVED_AT" timestamp(3) without time zone NULL DEFAULT (now() AT TIME ZONE 'utc'),
    CONSTRAINT "PK_DEMO_FILE_EVENT" PRIMARY KEY ("ID")
);
COMMENT ON TABLE dbo."DEMO_FILE_EVENT" IS 'Demo: záznam o přijatých souborech (plní procedura DEMO_FILE_RECEIVED).';

CREATE PROCEDURE dbo."DEMO_FILE_RECEIVED"(p_fileguid uuid)
LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO dbo."DEMO_FILE_EVENT" ("FILEGUID") VALUES (p_fileguid);
END;
$$;

-- -----------------------------------------------------------------------------
-- 7. WS_APPLICATION – an ERP's own register of Web API applications (holds secrets, NEVER
--    served by the API). DEMO ONLY: the demo tenant's applications are in its registry entry (a
--    real ERP's database has no such table); this one stands for the ERP that keeps a register of
--    its own, which a tenant may name instead ("applications": {"erpTable": "dbo.WS_APPLICATION"}).
-- -----------------------------------------------------------------------------
CREATE TABLE dbo."WS_APPLICATION" (
    "ID"         int           NOT NULL,
    "NAZEV"      varchar(100)  NULL,
    "API_KEY"    varchar(100)  NOT NULL,
    "API_HASH"   varchar(200)  NOT NULL,
    "AKTIVNI"    smallint      NOT NULL DEFAULT 1,
    "CREATED_AT" timestamp(0) without time zone NULL,
    CONSTRAINT "PK_WS_APPLICATION" PRIMARY KEY ("ID"),
    CONSTRAINT "UQ_WS_APPLICATION_API_KEY" UNIQUE ("API_KEY")
);
COMMENT ON TABLE dbo."WS_APPLICATION" IS 'Aplikace Web API (obsahuje tajemství – API je nikdy nevydává).';
