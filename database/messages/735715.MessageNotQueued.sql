SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC sys.sp_addmessage
    @msgnum = 735715,
    @severity = 16,
    @msgtext = N'relq: %s: message %s is not in %s: another consumer has received it since, or it never was',
    @lang = 'us_english',
    @replace = 'replace';
GO
