SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC sys.sp_addmessage
    @msgnum = 735703,
    @severity = 16,
    @msgtext = N'relq: %s: expected %d row(s) to change, but %d did',
    @lang = 'us_english',
    @replace = 'replace';
GO
