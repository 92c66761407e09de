-- =============================================================================
-- Demo: the demo tenant records SUBJECT and DOKUMENT (its registry's "changeFeed").
-- Run after service/050-change-feed.sql. IDEMPOTENT.
-- =============================================================================
SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
SET NOCOUNT ON;
GO
EXEC dbo.SVC_CHANGE_FEED_ENABLE N'dbo', N'SUBJECT';
GO
EXEC dbo.SVC_CHANGE_FEED_ENABLE N'dbo', N'DOKUMENT';
GO
