SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC sys.sp_addmessage
    @msgnum = 735718,
    @severity = 16,
    @msgtext = N'relq: %s: %s: a pause needs its reason in 1 to 400 characters, and who acts in 1 to 128',
    @lang = 'us_english',
    @replace = 'replace';
GO
