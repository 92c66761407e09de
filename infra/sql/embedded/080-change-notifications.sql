-- =============================================================================
-- Change notifications (CONTRACT.md section 4c): the same objects as
-- infra/sql/mssql/service/080-change-notifications.sql.
-- =============================================================================

CREATE TABLE dbo."SVC_SUBSCRIPTION" (
    "ID"                   varchar(40)   NOT NULL,
    "TENANT"               varchar(63)   NOT NULL DEFAULT '',
    "OWNER"                varchar(300)  NOT NULL,
    "SOURCE_SCHEMA"        varchar(128)  NOT NULL,
    "SOURCE_NAME"          varchar(128)  NOT NULL,
    "URL"                  varchar(2000) NOT NULL,
    "SECRET"               varchar(100)  NOT NULL,
    "PREVIOUS_SECRET"      varchar(100)  NULL,
    "SECRET_CHANGED_AT"    timestamp(3) without time zone NULL,
    "STATE"                varchar(10)   NOT NULL,
    "CREATED_AT"           timestamp(3) without time zone NOT NULL,
    "SEEN_FEED"            varchar(36)   NULL,
    "SEEN_BATCH"           bigint        NOT NULL,
    "NOTIFIED_BATCH"       bigint        NOT NULL,
    "LAST_CHANGE_AT"       timestamp(3) without time zone NULL,
    "LAST_NOTIFIED_AT"     timestamp(3) without time zone NULL,
    "LAST_DELIVERED_AT"    timestamp(3) without time zone NULL,
    "CONSECUTIVE_FAILURES" int           NOT NULL,
    "FAILING_SINCE"        timestamp(3) without time zone NULL,
    "DISABLED_AT"          timestamp(3) without time zone NULL,
    "DISABLED_REASON"      varchar(400)  NULL,
    "WAITING_EVENT"        varchar(64)   NULL,
    "WAITING_SINCE"        timestamp(3) without time zone NULL,
    "SLOW_SINCE"           timestamp(3) without time zone NULL,
    CONSTRAINT "PK_SVC_SUBSCRIPTION" PRIMARY KEY ("ID"),
    CONSTRAINT "CK_SVC_SUBSCRIPTION_STATE" CHECK ("STATE" IN ('pending', 'active', 'disabled'))
);
CREATE INDEX "IX_SVC_SUBSCRIPTION_TENANT_OWNER" ON dbo."SVC_SUBSCRIPTION" ("TENANT", "OWNER", "CREATED_AT");

CREATE TABLE dbo."SVC_NOTIFICATION_DELIVERY" (
    "ID"               bigint GENERATED ALWAYS AS IDENTITY,
    "TENANT"           varchar(63)  NOT NULL DEFAULT '',
    "SUBSCRIPTION_ID"  varchar(40)  NOT NULL,
    "EVENT_ID"         varchar(64)  NOT NULL,
    "EVENT_TYPE"       varchar(40)  NOT NULL,
    "ATTEMPT"          int          NOT NULL,
    "ATTEMPTED_AT"     timestamp(3) without time zone NOT NULL,
    "OUTCOME"          varchar(20)  NOT NULL,
    "HTTP_STATUS"      int          NULL,
    "ERROR"            varchar(400) NULL,
    "DURATION_MS"      int          NULL,
    "RETRY_IN_SECONDS" int          NULL,
    "MESSAGE_ID"       varchar(100) NOT NULL,
    CONSTRAINT "PK_SVC_NOTIFICATION_DELIVERY" PRIMARY KEY ("ID"),
    CONSTRAINT "CK_SVC_NOTIFICATION_DELIVERY_OUTCOME" CHECK ("OUTCOME" IN (
        'delivered', 'retrying', 'failed', 'gone', 'refused', 'disabled', 'deleted'))
);
COMMENT ON TABLE dbo."SVC_NOTIFICATION_DELIVERY" IS 'Pokusy o doručení oznámení o změně tabulky (EVENT_ID = hlavička webhook-id, ATTEMPTED_AT v UTC).';
CREATE INDEX "IX_SVC_NOTIFICATION_DELIVERY_MESSAGE" ON dbo."SVC_NOTIFICATION_DELIVERY" ("MESSAGE_ID");
CREATE INDEX "IX_SVC_NOTIFICATION_DELIVERY_SUBSCRIPTION" ON dbo."SVC_NOTIFICATION_DELIVERY" ("SUBSCRIPTION_ID", "ATTEMPTED_AT");

CREATE TABLE dbo."SVC_NOTIFIER_STATE" (
    "TENANT"       varchar(63) NOT NULL,
    "LAST_PASS_AT" timestamp(3) without time zone NULL,
    CONSTRAINT "PK_SVC_NOTIFIER_STATE" PRIMARY KEY ("TENANT")
);
