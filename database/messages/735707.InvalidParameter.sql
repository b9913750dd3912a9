SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC sys.sp_addmessage
    @msgnum = 735707,
    @severity = 16,
    @msgtext = N'relq: %s: %s',
    @lang = 'us_english',
    @replace = 'replace';
GO
