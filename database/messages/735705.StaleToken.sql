SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC sys.sp_addmessage
    @msgnum = 735705,
    @severity = 16,
    @msgtext = N'relq: %s: item %s has changed since it was read (token %s is stale): read it again',
    @lang = 'us_english',
    @replace = 'replace';
GO
