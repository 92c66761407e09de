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

-- 2001: a writing operation (CONTRACT 5a): creates a DOKUMENT of one params object
-- {"cislo": …, "subject_id": …, "castka": …} and answers its ID, as the T-SQL script's
-- WS_OP_DOKUMENT_CREATE does, by the same rule (see there). The ID is the next after the highest,
-- under a lock of the transaction (pg_advisory_xact_lock: SQL Server's application lock).
CREATE FUNCTION dbo."WS_OP_DOKUMENT_CREATE"(p_params jsonb)
RETURNS TABLE (id int)
LANGUAGE plpgsql
AS $$
DECLARE
    v_object  jsonb := CASE WHEN jsonb_typeof(p_params) = 'array' AND jsonb_array_length(p_params) = 1
                                 AND jsonb_typeof(p_params->0) = 'object' THEN p_params->0 END;
    v_cislo   text;
    v_subject numeric;
    v_castka  numeric;
    v_now     timestamp(0) := (now() AT TIME ZONE 'utc');
    v_id      int;
BEGIN
    IF v_object IS NULL THEN
        RAISE EXCEPTION '2001 takes one params object: {"cislo": …, "subject_id": …, "castka": …}';
    END IF;
    IF jsonb_typeof(v_object->'cislo') = 'string' THEN
        v_cislo := v_object->>'cislo';
    END IF;
    IF v_cislo IS NULL OR char_length(v_cislo) NOT BETWEEN 1 AND 20 THEN
        RAISE EXCEPTION 'cislo must be a text of 1 to 20 characters';
    END IF;

    -- A number by its value (5.0 is 5), digits as text by themselves; within int.
    IF jsonb_typeof(v_object->'subject_id') = 'number'
       OR (jsonb_typeof(v_object->'subject_id') = 'string' AND (v_object->>'subject_id') ~ '^[0-9]{1,10}$') THEN
        v_subject := (v_object->>'subject_id')::numeric;
    END IF;
    IF v_subject IS NULL OR v_subject <> trunc(v_subject) OR v_subject NOT BETWEEN 1 AND 2147483647 THEN
        RAISE EXCEPTION 'subject_id must be the ID of a subject (a whole number)';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM dbo."SUBJECT" s WHERE s."ID" = v_subject::int) THEN
        RAISE EXCEPTION 'subject_id % is not a subject (no SUBJECT of that ID)', v_subject::int;
    END IF;

    -- As text: digits, at most one point between digits, an optional minus before them.
    IF jsonb_typeof(v_object->'castka') = 'number'
       OR (jsonb_typeof(v_object->'castka') = 'string' AND (v_object->>'castka') ~ '^-?[0-9]+(\.[0-9]+)?$') THEN
        v_castka := (v_object->>'castka')::numeric;
    END IF;
    IF v_castka IS NULL OR v_castka <> round(v_castka, 2) OR abs(v_castka) >= 10000000000000 THEN
        RAISE EXCEPTION 'castka must be a number with at most two decimal places, less than 10000000000000 in absolute value';
    END IF;

    PERFORM pg_advisory_xact_lock(hashtextextended('demo DOKUMENT.ID', 0));
    SELECT coalesce(max(d."ID"), 0) + 1 INTO v_id FROM dbo."DOKUMENT" d;
    INSERT INTO dbo."DOKUMENT" ("ID", "CISLO", "TYP_DOKLADU", "SUBJECT_ID", "DATUM_VYSTAVENI", "DATUM_SPLATNOSTI",
        "DATUM_UZP", "CASTKA_ZAKLAD", "CASTKA_DPH", "CASTKA_CELKEM", "POPIS", "VYTVORENO")
    VALUES (v_id, v_cislo, 'FV', v_subject::int, v_now, v_now + interval '14 days', v_now::date,
        v_castka, 0, v_castka, 'Vytvořeno operací Web API 2001', v_now);
    RETURN QUERY SELECT v_id;
END;
$$;

-- 2002: ends its caller's transaction, as the T-SQL script's WS_OP_END_TRANSACTION does with a
-- ROLLBACK without a save point (error 266). A PostgreSQL function cannot end a transaction: its
-- ROLLBACK is refused when it runs (SQLSTATE 2D000, invalid transaction termination), inside the
-- service's transaction or not, and the DOKUMENT it wrote goes with the failed statement. The
-- service answers both alike: 120, the call journaled as failed.
CREATE FUNCTION dbo."WS_OP_END_TRANSACTION"(p_params jsonb)
RETURNS TABLE (id int)
LANGUAGE plpgsql
AS $$
DECLARE
    v_now timestamp(0) := (now() AT TIME ZONE 'utc');
BEGIN
    INSERT INTO dbo."DOKUMENT" ("ID", "CISLO", "TYP_DOKLADU", "DATUM_VYSTAVENI", "CASTKA_ZAKLAD", "CASTKA_DPH",
        "CASTKA_CELKEM", "POPIS", "VYTVORENO")
    SELECT coalesce(max(d."ID"), 0) + 1, 'KONEC', 'ID', v_now, 0, 0, 0, 'Operace Web API 2002 (vždy vrácena)', v_now
      FROM dbo."DOKUMENT" d;
    ROLLBACK;
END;
$$;

INSERT INTO dbo."WS_OPERATION" ("VLTYP", "NAZEV", "PROCEDURE_NAME", "ROW_NAME", "AKTIVNI") VALUES
    (1001, 'Vyhledání subjektů podle názvu a IČO',  'dbo.WS_OP_SUBJECT_SEARCH', 'Subject', 1),
    (7,    'Účty podle začátku kódu',               'dbo.WS_OP_UCET_SEARCH',    'Ucet',    1),
    (9001, 'Čekání (zkouška asynchronního volání)', 'dbo.WS_OP_SLEEP',          'Sleep',   1),
    (9002, 'Vždy selže v databázi',                 'dbo.WS_OP_FAIL',           'Fail',    1),
    (2001, 'Založení dokladu',                      'dbo.WS_OP_DOKUMENT_CREATE', 'Dokument', 1),
    (2002, 'Ukončí transakci volajícího (ukázka chyby)', 'dbo.WS_OP_END_TRANSACTION', 'Konec', 1);

ANALYZE dbo."WS_OPERATION";
