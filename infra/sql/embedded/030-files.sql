-- =============================================================================
-- Document store (setFile / getFile): a second demo procedure for userDBProcedure.
-- SVCDOC, DEMO_FILE_EVENT and DEMO_FILE_RECEIVED are in 010-schema.sql.
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
