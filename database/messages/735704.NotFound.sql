SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC sys.sp_addmessage
    @msgnum = 735704,
    @severity = 16,
    @msgtext = N'relq: %s: there is no item with key %s',
    @lang = 'us_english',
    @replace = 'replace';
GO
