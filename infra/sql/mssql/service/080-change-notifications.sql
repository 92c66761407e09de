-- =============================================================================
-- Change notifications (CONTRACT.md section 4c) – SQL Server 2016+, Azure SQL, the T-SQL engine.
-- SERVICE: what npm run db:apply creates on a tenant's database (only the service's objects).
-- IDEMPOTENT: safe to run any number of times.
-- sqlcmd -I -f 65001 -i 080-change-notifications.sql
--
-- An integrator's subscriptions to recorded tables (their secrets: never served by the Data API),
-- every attempt to deliver one of their events (readable, like WEBHOOK_DELIVERY), and the
-- notifier's heartbeat: when it last checked the tenant's subscribed tables.
-- =============================================================================
SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
SET NOCOUNT ON;
GO

-- One row per subscription. SEEN_* is the change feed's state the notifier last saw of the
-- source, NOTIFIED_BATCH the batch up to which a table.changed was sent; WAITING_EVENT the one
-- event waiting or being delivered (coalescing: no second while it is set).
IF OBJECT_ID(N'dbo.SVC_SUBSCRIPTION', N'U') IS NULL
BEGIN
    CREATE TABLE dbo.SVC_SUBSCRIPTION (
        ID                   nvarchar(40)   NOT NULL,  -- sub_<24 hex>
        -- Whose it is: every statement of the service names the tenant, so that tenants sharing a
        -- database never see, change or count each other's (N'': made before tenants were recorded).
        TENANT               nvarchar(63)   NOT NULL CONSTRAINT DF_SVC_SUBSCRIPTION_TENANT DEFAULT (N''),
        OWNER                nvarchar(300)  NOT NULL,  -- who made it: basic:<user>, client:<id>, bearer:<issuer> <sub>
        SOURCE_SCHEMA        nvarchar(128)  NOT NULL,
        SOURCE_NAME          nvarchar(128)  NOT NULL,
        URL                  nvarchar(2000) NOT NULL,
        SECRET               nvarchar(100)  NOT NULL,  -- whsec_…
        PREVIOUS_SECRET      nvarchar(100)  NULL,      -- signs too for the overlap after a rotation
        SECRET_CHANGED_AT    datetime2(3)   NULL,      -- UTC
        STATE                nvarchar(10)   NOT NULL,
        CREATED_AT           datetime2(3)   NOT NULL,  -- UTC
        SEEN_FEED            nvarchar(36)   NULL,
        SEEN_BATCH           bigint         NOT NULL,
        NOTIFIED_BATCH       bigint         NOT NULL,
        LAST_CHANGE_AT       datetime2(3)   NULL,
        LAST_NOTIFIED_AT     datetime2(3)   NULL,
        LAST_DELIVERED_AT    datetime2(3)   NULL,
        CONSECUTIVE_FAILURES int            NOT NULL,
        FAILING_SINCE        datetime2(3)   NULL,
        DISABLED_AT          datetime2(3)   NULL,
        DISABLED_REASON      nvarchar(400)  NULL,
        WAITING_EVENT        nvarchar(64)   NULL,
        WAITING_SINCE        datetime2(3)   NULL,
        SLOW_SINCE           datetime2(3)   NULL,      -- answers slower than the fast lane allows
        CONSTRAINT PK_SVC_SUBSCRIPTION PRIMARY KEY (ID),
        CONSTRAINT CK_SVC_SUBSCRIPTION_STATE CHECK (STATE IN (N'pending', N'active', N'disabled'))
    );
END;
GO
-- A database of the service from before subscriptions were its tenant's: their rows get N'' (no
-- tenant's), until `npm run db:apply -- … --tenant <id>` gives them to the tenant that made them.
-- Added with the delivery lanes: a receiver slower than the fast lane allows gets its attempts in the slow lane.
IF COL_LENGTH(N'dbo.SVC_SUBSCRIPTION', N'SLOW_SINCE') IS NULL
    ALTER TABLE dbo.SVC_SUBSCRIPTION ADD SLOW_SINCE datetime2(3) NULL;
GO
IF COL_LENGTH(N'dbo.SVC_SUBSCRIPTION', N'TENANT') IS NULL
    ALTER TABLE dbo.SVC_SUBSCRIPTION ADD TENANT nvarchar(63) NOT NULL
        CONSTRAINT DF_SVC_SUBSCRIPTION_TENANT DEFAULT (N'');
GO
IF INDEXPROPERTY(OBJECT_ID(N'dbo.SVC_SUBSCRIPTION'), N'IX_SVC_SUBSCRIPTION_TENANT_OWNER', 'IndexID') IS NULL
BEGIN
    BEGIN TRY
        CREATE NONCLUSTERED INDEX IX_SVC_SUBSCRIPTION_TENANT_OWNER ON dbo.SVC_SUBSCRIPTION (TENANT, OWNER, CREATED_AT);
    END TRY
    BEGIN CATCH
        -- 1913 (SQL Server) or 2714 (the T-SQL engine, which stores the name with a hash suffix): it exists.
        IF ERROR_NUMBER() NOT IN (1913, 2714) THROW;
    END CATCH;
END;
GO

-- Every attempt to deliver a subscription's event (and every decision not to send one).
IF OBJECT_ID(N'dbo.SVC_NOTIFICATION_DELIVERY', N'U') IS NULL
BEGIN
    CREATE TABLE dbo.SVC_NOTIFICATION_DELIVERY (
        ID               bigint IDENTITY(1, 1) NOT NULL,
        TENANT           nvarchar(63)  NOT NULL CONSTRAINT DF_SVC_NOTIFICATION_DELIVERY_TENANT DEFAULT (N''),
        SUBSCRIPTION_ID  nvarchar(40)  NOT NULL,
        EVENT_ID         nvarchar(64)  NOT NULL,  -- the webhook-id header
        EVENT_TYPE       nvarchar(40)  NOT NULL,  -- table.changed, subscription.ping
        ATTEMPT          int           NOT NULL,  -- 1-based, per queue message
        ATTEMPTED_AT     datetime2(3)  NOT NULL,  -- UTC
        OUTCOME          nvarchar(20)  NOT NULL,
        HTTP_STATUS      int           NULL,
        ERROR            nvarchar(400) NULL,
        DURATION_MS      int           NULL,
        RETRY_IN_SECONDS int           NULL,
        MESSAGE_ID       nvarchar(100) NOT NULL,
        CONSTRAINT PK_SVC_NOTIFICATION_DELIVERY PRIMARY KEY (ID),
        CONSTRAINT CK_SVC_NOTIFICATION_DELIVERY_OUTCOME CHECK (OUTCOME IN (
            N'delivered', N'retrying', N'failed', N'gone', N'refused', N'disabled', N'deleted'))
    );
END;
GO
-- Read through the Data API, a tenant sees its own rows only (N'': from before tenants were recorded).
IF COL_LENGTH(N'dbo.SVC_NOTIFICATION_DELIVERY', N'TENANT') IS NULL
    ALTER TABLE dbo.SVC_NOTIFICATION_DELIVERY ADD TENANT nvarchar(63) NOT NULL
        CONSTRAINT DF_SVC_NOTIFICATION_DELIVERY_TENANT DEFAULT (N'');
GO
IF INDEXPROPERTY(OBJECT_ID(N'dbo.SVC_NOTIFICATION_DELIVERY'), N'IX_SVC_NOTIFICATION_DELIVERY_MESSAGE', 'IndexID') IS NULL
BEGIN
    BEGIN TRY
        CREATE NONCLUSTERED INDEX IX_SVC_NOTIFICATION_DELIVERY_MESSAGE ON dbo.SVC_NOTIFICATION_DELIVERY (MESSAGE_ID);
    END TRY
    BEGIN CATCH
        IF ERROR_NUMBER() NOT IN (1913, 2714) THROW;
    END CATCH;
END;
GO
IF INDEXPROPERTY(OBJECT_ID(N'dbo.SVC_NOTIFICATION_DELIVERY'), N'IX_SVC_NOTIFICATION_DELIVERY_SUBSCRIPTION', 'IndexID') IS NULL
BEGIN
    BEGIN TRY
        CREATE NONCLUSTERED INDEX IX_SVC_NOTIFICATION_DELIVERY_SUBSCRIPTION ON dbo.SVC_NOTIFICATION_DELIVERY (SUBSCRIPTION_ID, ATTEMPTED_AT);
    END TRY
    BEGIN CATCH
        IF ERROR_NUMBER() NOT IN (1913, 2714) THROW;
    END CATCH;
END;
GO

-- The notifier's heartbeat, one row per tenant: when a pass last checked its subscribed tables
-- (NULL: no pass runs, the next subscription starts one).
IF OBJECT_ID(N'dbo.SVC_NOTIFIER_STATE', N'U') IS NULL
BEGIN
    CREATE TABLE dbo.SVC_NOTIFIER_STATE (
        TENANT       nvarchar(63) NOT NULL,
        LAST_PASS_AT datetime2(3) NULL,  -- UTC
        CONSTRAINT PK_SVC_NOTIFIER_STATE PRIMARY KEY (TENANT)
    );
END;
GO
