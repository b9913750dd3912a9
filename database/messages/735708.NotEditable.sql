SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC sys.sp_addmessage
    @msgnum = 735708,
    @severity = 16,
    @msgtext = N'relq: %s: item %s is %s and can no longer change',
    @lang = 'us_english',
    @replace = 'replace';
GO
