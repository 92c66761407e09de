-- =============================================================================
-- DEMO ONLY: the demo's procedures and Web API operations for the embedded PostgreSQL, the same
-- as infra/sql/mssql/demo/060-demo-procedures.sql (SQL Server). Run after 030-web-api.sql
-- (WS_OPERATION, SVC_DELAY). DEMO_FILE_EVENT and DEMO_FILE_RECEIVED are in 010-erp-schema.sql.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- DEMO_FILE_FAIL – always fails, to try a failing userDBProcedure (setFile answers
-- 502 with the fileGUID and keeps the file). Not allowed in the demo tenant.
--    CALL dbo."DEMO_FILE_FAIL"($1)
-- -----------------------------------------------------------------------------
CREATE PROCEDURE dbo."DEMO_FILE_FAIL"(p_fileguid uuid)
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION 'DEMO_FILE_FAIL rejects file %', p_fileguid;
END;
$$;

-- -----------------------------------------------------------------------------
-- Demo operations
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
