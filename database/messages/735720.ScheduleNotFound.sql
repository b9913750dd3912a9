SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC sys.sp_addmessage
    @msgnum = 735720,
    @severity = 16,
    @msgtext = N'relq: %s: there is no schedule named %s',
    @lang = 'us_english',
    @replace = 'replace';
GO
