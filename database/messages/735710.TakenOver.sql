SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC sys.sp_addmessage
    @msgnum = 735710,
    @severity = 16,
    @msgtext = N'relq: %s: item %s was claimed again at %s by %s (lease expired or worker restarted): drop it',
    @lang = 'us_english',
    @replace = 'replace';
GO
