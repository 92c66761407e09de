-- =============================================================================
-- Receipt webhook: one row per delivery attempt (and per decision not to send).
-- Same table, columns and outcomes as infra/sql/mssql/service/040-webhook.sql.
-- =============================================================================

CREATE TABLE dbo."WEBHOOK_DELIVERY" (
    "ID"               bigint GENERATED ALWAYS AS IDENTITY,
    "TENANT"           varchar(63)  NOT NULL DEFAULT '',
    "EVENT_ID"         varchar(64)  NOT NULL,
    "SUBJECT_ID"       int          NOT NULL,
    "DOCUMENT_ID"      bigint       NOT NULL,
    "ATTEMPT"          int          NOT NULL,
    "ATTEMPTED_AT"     timestamp(3) without time zone NOT NULL,
    "OUTCOME"          varchar(20)  NOT NULL,
    "HTTP_STATUS"      int          NULL,
    "ERROR"            varchar(400) NULL,
    "DURATION_MS"      int          NULL,
    "RETRY_IN_SECONDS" int          NULL,
    "MESSAGE_ID"       varchar(100) NULL,
    "RECOVERS_ID"      bigint       NULL,
    CONSTRAINT "PK_WEBHOOK_DELIVERY" PRIMARY KEY ("ID"),
    CONSTRAINT "CK_WEBHOOK_DELIVERY_OUTCOME" CHECK ("OUTCOME" IN (
        'delivered', 'retrying', 'failed', 'gone', 'refused', 'skipped', 'duplicate', 'unknown_subject',
        'disabled', 'resent', 'requeued'))
);
COMMENT ON TABLE dbo."WEBHOOK_DELIVERY" IS 'Pokusy o doručení webhooku o přijetí dokumentu (EVENT_ID = hlavička webhook-id, ATTEMPTED_AT v UTC).';
COMMENT ON COLUMN dbo."WEBHOOK_DELIVERY"."MESSAGE_ID" IS 'Zpráva fronty, která kopii události nesla: pokusy (ATTEMPT) se počítají pro každou zprávu zvlášť.';
COMMENT ON COLUMN dbo."WEBHOOK_DELIVERY"."OUTCOME" IS 'delivered, retrying, failed (poslední pokus, zpráva jde do DLQ), gone (410), refused, skipped (bez WEBHOOK_URL), duplicate, unknown_subject, disabled (koncový bod vypnut, neodesláno), resent (doručeno znovu odeslanou kopií), requeued (znovu zařazeno do fronty funkcí recover; RECOVERS_ID = řádek, který obnovuje).';

-- An event is delivered at most once: a second copy finds this row and is not sent again.
CREATE UNIQUE INDEX "UX_WEBHOOK_DELIVERY_DELIVERED" ON dbo."WEBHOOK_DELIVERY" ("EVENT_ID")
    WHERE "OUTCOME" = 'delivered';
-- A failed or disabled row is sent again by one recover only: the `requeued` row that claims it
-- names it, once (two recovers at once: the second finds the claim taken).
CREATE UNIQUE INDEX "UX_WEBHOOK_DELIVERY_RECOVERS" ON dbo."WEBHOOK_DELIVERY" ("RECOVERS_ID")
    WHERE "RECOVERS_ID" IS NOT NULL;
CREATE INDEX "IX_WEBHOOK_DELIVERY_DOCUMENT" ON dbo."WEBHOOK_DELIVERY" ("SUBJECT_ID", "DOCUMENT_ID");
-- Outcomes of an event since a time (the admin function's recover) and a subject's last attempts.
CREATE INDEX "IX_WEBHOOK_DELIVERY_ATTEMPTED" ON dbo."WEBHOOK_DELIVERY" ("ATTEMPTED_AT", "SUBJECT_ID");

-- The webhook secret memory and endpoint state (same as infra/sql/mssql/service/040-webhook.sql): written
-- by the service only; holds secrets, so never served by the Data API.
CREATE TABLE dbo."WEBHOOK_ENDPOINT" (
    "TENANT"            varchar(63)  NOT NULL DEFAULT '',
    "SUBJECT_ID"        int          NOT NULL,
    "WEBHOOK_URL"       varchar(500) NULL,
    "SECRET"            varchar(200) NULL,
    "PREVIOUS_SECRET"   varchar(200) NULL,
    "SECRET_CHANGED_AT" timestamp(3) without time zone NULL,
    "FAILING_SINCE"     timestamp(3) without time zone NULL,
    "DISABLED_AT"       timestamp(3) without time zone NULL,
    "ENABLED_AT"        timestamp(3) without time zone NOT NULL,
    "SLOW_SINCE"        timestamp(3) without time zone NULL,
    CONSTRAINT "PK_WEBHOOK_ENDPOINT" PRIMARY KEY ("TENANT", "SUBJECT_ID")
);
COMMENT ON TABLE dbo."WEBHOOK_ENDPOINT" IS 'Paměť tajemství a stav koncového bodu webhooku pro každý subjekt (interní, API ji nikdy nevydá).';

-- Which copy of an event is sending it now (CONTRACT 6: an event delivered is not delivered again
-- when it arrives twice, also when two copies arrive at once on two instances): a copy claims its
-- event before it sends, for as long as its attempt can take; another copy that finds a live claim
-- of another message waits, and finds the event delivered when it comes back. Removed after the
-- attempt; a claim left by a crashed instance lapses at UNTIL.
CREATE TABLE dbo."SVC_WEBHOOK_SENDING" (
    "TENANT"     varchar(63)  NOT NULL,
    "EVENT_ID"   varchar(64)  NOT NULL,
    "MESSAGE_ID" varchar(100) NOT NULL,
    "UNTIL"      timestamp(3) without time zone NOT NULL,
    CONSTRAINT "PK_SVC_WEBHOOK_SENDING" PRIMARY KEY ("TENANT", "EVENT_ID")
);
COMMENT ON TABLE dbo."SVC_WEBHOOK_SENDING" IS 'Která kopie události ji právě odesílá (interní, API ji nikdy nevydá).';
