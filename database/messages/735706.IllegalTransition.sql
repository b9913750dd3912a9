SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC sys.sp_addmessage
    @msgnum = 735706,
    @severity = 16,
    @msgtext = N'relq: %s: item %s cannot go from %s to %s',
    @lang = 'us_english',
    @replace = 'replace';
GO
