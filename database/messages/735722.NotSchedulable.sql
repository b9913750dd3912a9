SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC sys.sp_addmessage
    @msgnum = 735722,
    @severity = 16,
    @msgtext = N'relq: %s: queue %s cannot take scheduled jobs of type %s: %s',
    @lang = 'us_english',
    @replace = 'replace';
GO
