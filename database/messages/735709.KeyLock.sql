SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC sys.sp_addmessage
    @msgnum = 735709,
    @severity = 16,
    @msgtext = N'relq: %s: could not lock %s within 10 s (%d); retry the call',
    @lang = 'us_english',
    @replace = 'replace';
GO
