-- =============================================================================
-- DEMO ONLY: the demo tenant records SUBJECT and DOKUMENT (its registry's "changeFeed"), as
-- infra/sql/mssql/demo/070-demo-change-feed.sql does on SQL Server. Run after 050-change-feed.sql.
-- =============================================================================
SELECT dbo.svc_change_feed_enable('dbo', 'SUBJECT');
SELECT dbo.svc_change_feed_enable('dbo', 'DOKUMENT');
