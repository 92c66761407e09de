-- =============================================================================
-- Web API – operations, journal and replay guard for the embedded PostgreSQL.
-- Same objects and names as infra/sql/mssql/030-web-api.sql (SQL Server).
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

-- Which tenant's call each WS_JOURNAL row is (as infra/sql/mssql/service/030-web-api.sql).
CREATE TABLE dbo."SVC_JOURNAL" (
    "JOURNAL_ID" bigint      NOT NULL,
    "TENANT"     varchar(63) NOT NULL,
    CONSTRAINT "PK_SVC_JOURNAL" PRIMARY KEY ("JOURNAL_ID")
);
COMMENT ON TABLE dbo."SVC_JOURNAL" IS 'Kterému tenantovi patří volání v WS_JOURNAL (997 odpovídá jen na vlastní).';

-- -----------------------------------------------------------------------------
-- 4. SVC_DELAY – a wait that does not freeze the service
--    PGlite runs inside the service's own process: pg_sleep would stop every
--    request. This notice asks the embedded adapter to wait p_seconds after the
--    statement instead, without holding the database (shared/adapters/embedded-sql).
-- -----------------------------------------------------------------------------
CREATE FUNCTION dbo."SVC_DELAY"(p_seconds numeric)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE NOTICE USING MESSAGE = 'svc_delay', DETAIL = p_seconds::text;
END;
$$;

-- -----------------------------------------------------------------------------
-- 5. Demo operations
-- -----------------------------------------------------------------------------
-- 1001: subjects; each params object is one filter (nazev: substring, case-insensitive;
--       ico: exact), the rows match any of them; no params: every subject.
CREATE FUNCTION dbo."WS_OP_SUBJECT_SEARCH"(p_params jsonb)
RETURNS TABLE (id int, nazev varchar, ico varchar, mesto varchar)
LANGUAGE sql
STABLE
AS $$
    SELECT s."ID", s."NAZEV", s."ICO", s."MESTO"
      FROM dbo."SUBJECT" s
     WHERE jsonb_array_length(coalesce(p_params, '[]'::jsonb)) = 0
        OR EXISTS (
            SELECT 1
              FROM jsonb_array_elements(p_params) AS f(p)
             WHERE (f.p->>'nazev' IS NULL OR strpos(lower(s."NAZEV"), lower(f.p->>'nazev')) > 0)
               AND (f.p->>'ico' IS NULL OR s."ICO" = f.p->>'ico'))
     ORDER BY s."ID";
$$;

-- 7: accounts whose code starts with kod_uctu (any of the params objects); no params: all.
CREATE FUNCTION dbo."WS_OP_UCET_SEARCH"(p_params jsonb)
RETURNS TABLE (kod_uctu varchar, nazev varchar, zustatek numeric)
LANGUAGE sql
STABLE
AS $$
    SELECT u."KOD_UCTU", u."NAZEV", u."ZUSTATEK"
      FROM dbo."UCET" u
     WHERE jsonb_array_length(coalesce(p_params, '[]'::jsonb)) = 0
        OR EXISTS (
            SELECT 1
              FROM jsonb_array_elements(p_params) AS f(p)
             WHERE f.p->>'kod_uctu' IS NULL OR starts_with(u."KOD_UCTU", f.p->>'kod_uctu'))
     ORDER BY u."KOD_UCTU";
$$;

-- 9001: waits `seconds` and answers how long it slept. One rule on every database (the T-SQL
-- script has the same): a JSON number from 0 to 60 with at most three fraction digits by its
-- value (1e1, 0.5000 are fine), or a string of one or two digits and at most three fraction digits
-- ("1.5"; no sign, exponent or blank); missing or null is 0; anything else is refused.
CREATE FUNCTION dbo."WS_OP_SLEEP"(p_params jsonb)
RETURNS TABLE (slept numeric)
LANGUAGE plpgsql
AS $$
DECLARE
    v_value   jsonb := CASE WHEN jsonb_typeof(p_params) = 'array' AND jsonb_typeof(p_params->0) = 'object'
                            THEN p_params->0->'seconds' END;
    v_seconds numeric;
BEGIN
    IF v_value IS NULL OR jsonb_typeof(v_value) = 'null' THEN
        v_seconds := 0;
    ELSIF jsonb_typeof(v_value) = 'number' THEN
        -- As a double, as SQL Server reads a JSON number: then at most three fraction digits.
        v_seconds := (v_value #>> '{}')::numeric;
        IF v_seconds < 0 OR v_seconds > 60
           OR round(v_seconds::float8::numeric, 3)::float8 <> v_seconds::float8 THEN
            v_seconds := NULL;
        ELSE
            v_seconds := round(v_seconds::float8::numeric, 3);
        END IF;
    ELSIF jsonb_typeof(v_value) = 'string' AND (v_value #>> '{}') ~ '^[0-9]{1,2}(\.[0-9]{1,3})?$' THEN
        v_seconds := (v_value #>> '{}')::numeric;
    END IF;
    IF v_seconds IS NULL OR v_seconds < 0 OR v_seconds > 60 THEN
        RAISE EXCEPTION 'seconds must be a number from 0 to 60 with at most three fraction digits';
    END IF;
    v_seconds := round(v_seconds, 3);
    PERFORM dbo."SVC_DELAY"(v_seconds);
    RETURN QUERY SELECT v_seconds::numeric(5, 3);
END;
$$;

-- 9002: always fails inside the database.
CREATE FUNCTION dbo."WS_OP_FAIL"(p_params jsonb)
RETURNS TABLE (result int)
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION 'Operation 9002 always fails (demo of a failing procedure)';
END;
$$;

INSERT INTO dbo."WS_OPERATION" ("VLTYP", "NAZEV", "PROCEDURE_NAME", "ROW_NAME", "AKTIVNI") VALUES
    (1001, 'Vyhledání subjektů podle názvu a IČO',  'dbo.WS_OP_SUBJECT_SEARCH', 'Subject', 1),
    (7,    'Účty podle začátku kódu',               'dbo.WS_OP_UCET_SEARCH',    'Ucet',    1),
    (9001, 'Čekání (zkouška asynchronního volání)', 'dbo.WS_OP_SLEEP',          'Sleep',   1),
    (9002, 'Vždy selže v databázi',                 'dbo.WS_OP_FAIL',           'Fail',    1);

ANALYZE dbo."WS_OPERATION";
