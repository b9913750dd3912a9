SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC sys.sp_addmessage
    @msgnum = 735711,
    @severity = 16,
    @msgtext = N'relq: %s: item %s cannot become unfinished again: unfinished item %s carries the same DedupKey',
    @lang = 'us_english',
    @replace = 'replace';
GO
