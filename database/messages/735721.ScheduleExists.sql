SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC sys.sp_addmessage
    @msgnum = 735721,
    @severity = 16,
    @msgtext = N'relq: %s: a schedule named %s exists already: remove it first, or choose another name',
    @lang = 'us_english',
    @replace = 'replace';
GO
