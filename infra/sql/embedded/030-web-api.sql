-- =============================================================================
-- Web API – operations, journal and replay guard for the embedded PostgreSQL.
-- Same objects and names as infra/sql/mssql/service/030-web-api.sql (SQL Server).
--
-- An operation (WS_OPERATION.VLTYP) is a database function that receives the
-- request's params as ONE jsonb argument (the array [{"name": value, ...}, ...];
-- XML values arrive as strings) and whose result set is the answer's data. Its
-- column names are the answer's names (lower-case). A failure raised with
-- RAISE EXCEPTION (SQLSTATE P0001) reaches the caller with its message.
--
-- WS_JOURNAL.APPLICATION_ID is the application's id in the tenant registry (or in the ERP's
-- register WS_APPLICATION, where a tenant names it): no foreign key, as on SQL Server.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- 1. WS_OPERATION – vltyp → procedure and row name (rows are <row<ROW_NAME>> in XML)
-- -----------------------------------------------------------------------------
CREATE TABLE dbo."WS_OPERATION" (
    "VLTYP"          int           NOT NULL,
    "NAZEV"          varchar(200)  NULL,
    "PROCEDURE_NAME" varchar(261)  NOT NULL,
    "ROW_NAME"       varchar(64)   NOT NULL,
    "AKTIVNI"        smallint      NOT NULL DEFAULT 1,
    CONSTRAINT "PK_WS_OPERATION" PRIMARY KEY ("VLTYP"),
    -- 997 is the service's own: the result of an earlier call.
    CONSTRAINT "CK_WS_OPERATION_VLTYP" CHECK ("VLTYP" <> 997),
    CONSTRAINT "CK_WS_OPERATION_AKTIVNI" CHECK ("AKTIVNI" IN (-1, 0, 1))
);
COMMENT ON TABLE dbo."WS_OPERATION" IS 'Operace Web API: vltyp → databázová procedura (parametry jako jeden JSON) a název řádku.';

-- -----------------------------------------------------------------------------
-- 2. WS_JOURNAL – every accepted call; the answer's "id" is ID
-- -----------------------------------------------------------------------------
CREATE TABLE dbo."WS_JOURNAL" (
    "ID"             int           GENERATED ALWAYS AS IDENTITY,
    "APPLICATION_ID" int           NOT NULL,
    "VLTYP"          int           NOT NULL,
    "CALL_MODE"      varchar(5)    NOT NULL,
    "STATE"          varchar(8)    NOT NULL DEFAULT 'running',
    "REQUEST"        text          NOT NULL,
    "ANSWER"         text          NULL,
    "VL_RESULT"      int           NULL,
    "ROW_NAME"       varchar(64)   NULL,
    "ATTEMPTS"       int           NOT NULL DEFAULT 0,
    "LEASE_UNTIL"    timestamp(3) without time zone NULL,
    "REQUEST_ID"     varchar(100)  NULL,
    "CREATED_AT"     timestamp(3) without time zone NOT NULL DEFAULT (now() AT TIME ZONE 'utc'),
    "FINISHED_AT"    timestamp(3) without time zone NULL,
    CONSTRAINT "PK_WS_JOURNAL" PRIMARY KEY ("ID"),
    CONSTRAINT "CK_WS_JOURNAL_STATE" CHECK ("STATE" IN ('running', 'finished', 'failed')),
    CONSTRAINT "CK_WS_JOURNAL_CALL_MODE" CHECK ("CALL_MODE" IN ('sync', 'async'))
);
COMMENT ON TABLE dbo."WS_JOURNAL" IS 'Žurnál volání Web API: požadavek, odpověď (JSON), stav running/finished/failed, časy (UTC).';

-- -----------------------------------------------------------------------------
-- 3. WS_REPLAY_GUARD – signed requests already accepted (CheckReplayRequest)
--    The primary key makes the check hold across concurrent Lambdas.
-- -----------------------------------------------------------------------------
CREATE TABLE dbo."WS_REPLAY_GUARD" (
    "APPLICATION_ID" int           NOT NULL,
    "REQUEST_DIGEST" char(64)      NOT NULL,
    "EXPIRES_AT"     timestamp(3) without time zone NOT NULL,
    CONSTRAINT "PK_WS_REPLAY_GUARD" PRIMARY KEY ("APPLICATION_ID", "REQUEST_DIGEST")
);
CREATE INDEX "IX_WS_REPLAY_GUARD_EXPIRES_AT" ON dbo."WS_REPLAY_GUARD" ("EXPIRES_AT");
COMMENT ON TABLE dbo."WS_REPLAY_GUARD" IS 'Přijaté podepsané požadavky (SHA-256 z "<t>.<tělo>") do EXPIRES_AT (UTC).';

-- Which tenant's call each WS_JOURNAL row is, and its request's trace id (as
-- infra/sql/mssql/service/030-web-api.sql).
CREATE TABLE dbo."SVC_JOURNAL" (
    "JOURNAL_ID" bigint      NOT NULL,
    "TENANT"     varchar(63) NOT NULL,
    "TRACE_ID"   char(32)    NULL,
    CONSTRAINT "PK_SVC_JOURNAL" PRIMARY KEY ("JOURNAL_ID")
);
CREATE INDEX "IX_SVC_JOURNAL_TRACE" ON dbo."SVC_JOURNAL" ("TRACE_ID");
COMMENT ON TABLE dbo."SVC_JOURNAL" IS 'Kterému tenantovi patří volání v WS_JOURNAL (997 odpovídá jen na vlastní).';

-- -----------------------------------------------------------------------------
-- 4. SVC_DELAY – a wait that does not freeze the service
--    PGlite runs inside the service's own process: pg_sleep would stop every
--    request. This notice asks the embedded adapter to wait p_seconds after the
--    statement instead, without holding the database (shared/adapters/embedded).
-- -----------------------------------------------------------------------------
CREATE FUNCTION dbo."SVC_DELAY"(p_seconds numeric)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE NOTICE USING MESSAGE = 'svc_delay', DETAIL = p_seconds::text;
END;
$$;
