-- =============================================================================
-- Exactly once (CONTRACT.md section 5a): the same table as
-- infra/sql/mssql/service/090-idempotency.sql. A key's recorded answer, written in the
-- transaction of the call's effects; it holds subscriptions' secrets in recorded answers, so it is
-- never a Data API source. Which call holds a key while it runs is never a row here (on SQL Server
-- an application lock its transaction owns; the embedded database has one session, which runs the
-- calls' transactions one after another).
-- =============================================================================

CREATE TABLE dbo."SVC_IDEMPOTENCY" (
    "KEY_DIGEST"   char(64)      NOT NULL,  -- hex SHA-256 of tenant, caller and key
    "TENANT"       varchar(63)   NOT NULL,
    "FINGERPRINT"  char(64)      NOT NULL,
    "HTTP_STATUS"  int           NOT NULL,
    "CONTENT_TYPE" varchar(200)  NULL,
    "HEADERS"      text          NULL,      -- a JSON object of further answer headers
    "BODY"         bytea         NULL,
    "OBJECT_KEY"   varchar(1024) NULL,
    "JOURNAL_ID"   int           NULL,
    "CREATED_AT"   timestamp(3) without time zone NOT NULL DEFAULT (now() AT TIME ZONE 'utc'),
    "EXPIRES_AT"   timestamp(3) without time zone NOT NULL,
    CONSTRAINT "PK_SVC_IDEMPOTENCY" PRIMARY KEY ("KEY_DIGEST")
);
COMMENT ON TABLE dbo."SVC_IDEMPOTENCY" IS 'Zaznamenané odpovědi volání s hlavičkou Idempotency-Key (do EXPIRES_AT v UTC); obsahuje i tajemství odběrů, Data API ji nikdy nečte.';
CREATE INDEX "IX_SVC_IDEMPOTENCY_EXPIRES" ON dbo."SVC_IDEMPOTENCY" ("EXPIRES_AT");
