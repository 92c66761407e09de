-- =============================================================================
-- Change feed (CONTRACT.md section 4b): the same objects as infra/sql/mssql/service/050-change-feed.sql.
-- A recorded table has a change table SVC_CHANGES_<TABLE> (its primary-key columns, BATCH,
-- STAMPED_AT) filled by triggers in the writer's transaction; the service stamps committed rows
-- with the next batch number when it reads (MVCC hides rows of transactions still open).
-- PostgreSQL takes transition tables only on triggers of one event: three statement triggers.
-- =============================================================================

CREATE TABLE dbo."SVC_CHANGE_FEED" (
    "SOURCE_SCHEMA"    varchar(128) NOT NULL,
    "SOURCE_NAME"      varchar(128) NOT NULL,
    "CHANGE_TABLE"     varchar(128) NOT NULL,
    "FEED_ID"          uuid         NOT NULL DEFAULT gen_random_uuid(),
    "LAST_BATCH"       bigint       NOT NULL DEFAULT 0,
    "REMOVED_TO_BATCH" bigint       NOT NULL DEFAULT 0,
    "INSTALLED_AT"     timestamp(3) without time zone NOT NULL DEFAULT (now() AT TIME ZONE 'UTC'),
    CONSTRAINT "PK_SVC_CHANGE_FEED" PRIMARY KEY ("SOURCE_SCHEMA", "SOURCE_NAME")
);

-- Turns recording on for a table (idempotent): change table, index, triggers, feed row.
CREATE FUNCTION dbo.svc_change_feed_enable(source_schema text, source_name text) RETURNS void
LANGUAGE plpgsql AS $enable$
DECLARE
    rel regclass;
    schema_name text;
    table_name text;
    change_table text;
    key_columns text;
    key_names text;
    event text;
BEGIN
    SELECT c.oid, n.nspname, c.relname INTO rel, schema_name, table_name
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind = 'r' AND lower(n.nspname) = lower(source_schema) AND lower(c.relname) = lower(source_name);
    IF rel IS NULL THEN
        RAISE EXCEPTION 'svc_change_feed_enable: no such table';
    END IF;
    -- The longest name derived from the table's, IX_SVC_CHANGES_<TABLE>_BATCH, must fit 63 bytes:
    -- past it PostgreSQL cuts names, and two of a table's triggers (or two tables' objects) would
    -- share one.
    IF octet_length('IX_SVC_CHANGES_' || table_name || '_BATCH') > 63 THEN
        RAISE EXCEPTION 'svc_change_feed_enable: the change feed cannot record table %: its name has % bytes, and the names derived from it (the longest, IX_SVC_CHANGES_<table>_BATCH, 21 more) would pass the limit of 63 bytes: a recorded table''s name may have at most 42 bytes',
            table_name, octet_length(table_name);
    END IF;
    SELECT string_agg(format('%I %s NOT NULL', a.attname, format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY k.ord),
           string_agg(format('%I', a.attname), ', ' ORDER BY k.ord)
    INTO key_columns, key_names
    FROM pg_index i
    CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
    JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
    WHERE i.indrelid = rel AND i.indisprimary;
    IF key_columns IS NULL THEN
        RAISE EXCEPTION 'svc_change_feed_enable: the table has no primary key';
    END IF;
    change_table := 'SVC_CHANGES_' || table_name;
    EXECUTE format('CREATE TABLE IF NOT EXISTS %I.%I (%s, "BATCH" bigint NULL, "STAMPED_AT" timestamp(3) without time zone NULL, "TRACEPARENT" varchar(55) NULL)',
        schema_name, change_table, key_columns);
    EXECUTE format('ALTER TABLE %I.%I ADD COLUMN IF NOT EXISTS "TRACEPARENT" varchar(55) NULL', schema_name, change_table);
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I.%I ("BATCH", %s)',
        'IX_' || change_table || '_BATCH', schema_name, change_table, key_names);
    EXECUTE format($f$CREATE OR REPLACE FUNCTION %I.%I() RETURNS trigger LANGUAGE plpgsql AS $t$
        DECLARE
            -- The writer's trace (CONTRACT 8a): what the service sets for a write of its own (the
            -- transaction's svc.traceparent); none for the ERP's own writes.
            writer varchar(55) := left(NULLIF(current_setting('svc.traceparent', true), ''), 55);
        BEGIN
            IF TG_OP = 'INSERT' THEN
                INSERT INTO %I.%I (%s, "TRACEPARENT") SELECT %s, writer FROM svc_new;
            ELSIF TG_OP = 'DELETE' THEN
                INSERT INTO %I.%I (%s, "TRACEPARENT") SELECT %s, writer FROM svc_old;
            ELSE
                INSERT INTO %I.%I (%s, "TRACEPARENT") SELECT written.*, writer FROM (SELECT %s FROM svc_new UNION SELECT %s FROM svc_old) AS written;
            END IF;
            RETURN NULL;
        END $t$ $f$,
        schema_name, lower(change_table) || '_trg',
        schema_name, change_table, key_names, key_names,
        schema_name, change_table, key_names, key_names,
        schema_name, change_table, key_names, key_names, key_names);
    FOREACH event IN ARRAY ARRAY['INSERT', 'UPDATE', 'DELETE'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = rel
                AND tgname = change_table || '_' || event) THEN
            EXECUTE format('CREATE TRIGGER %I AFTER %s ON %I.%I REFERENCING %s FOR EACH STATEMENT EXECUTE FUNCTION %I.%I()',
                change_table || '_' || event, event, schema_name, table_name,
                CASE event WHEN 'INSERT' THEN 'NEW TABLE AS svc_new'
                           WHEN 'DELETE' THEN 'OLD TABLE AS svc_old'
                           ELSE 'OLD TABLE AS svc_old NEW TABLE AS svc_new' END,
                schema_name, lower(change_table) || '_trg');
        END IF;
    END LOOP;
    INSERT INTO dbo."SVC_CHANGE_FEED" ("SOURCE_SCHEMA", "SOURCE_NAME", "CHANGE_TABLE")
    VALUES (schema_name, table_name, change_table)
    ON CONFLICT DO NOTHING;
END $enable$;

-- Stops recording a table: drops its triggers and change table and forgets it.
CREATE FUNCTION dbo.svc_change_feed_disable(source_schema text, source_name text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    feed record;
BEGIN
    SELECT * INTO feed FROM dbo."SVC_CHANGE_FEED"
    WHERE lower("SOURCE_SCHEMA") = lower(source_schema) AND lower("SOURCE_NAME") = lower(source_name);
    IF NOT FOUND THEN
        RETURN;
    END IF;
    EXECUTE format('DROP TABLE IF EXISTS %I.%I', feed."SOURCE_SCHEMA", feed."CHANGE_TABLE");
    EXECUTE format('DROP TRIGGER IF EXISTS %I ON %I.%I', feed."CHANGE_TABLE" || '_INSERT', feed."SOURCE_SCHEMA", feed."SOURCE_NAME");
    EXECUTE format('DROP TRIGGER IF EXISTS %I ON %I.%I', feed."CHANGE_TABLE" || '_UPDATE', feed."SOURCE_SCHEMA", feed."SOURCE_NAME");
    EXECUTE format('DROP TRIGGER IF EXISTS %I ON %I.%I', feed."CHANGE_TABLE" || '_DELETE', feed."SOURCE_SCHEMA", feed."SOURCE_NAME");
    EXECUTE format('DROP FUNCTION IF EXISTS %I.%I()', feed."SOURCE_SCHEMA", lower(feed."CHANGE_TABLE") || '_trg');
    DELETE FROM dbo."SVC_CHANGE_FEED"
    WHERE "SOURCE_SCHEMA" = feed."SOURCE_SCHEMA" AND "SOURCE_NAME" = feed."SOURCE_NAME";
END $$;
