SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC sys.sp_addmessage
    @msgnum = 735714,
    @severity = 16,
    @msgtext = N'relq: %s: job procedure ''%s'' of type %s was not run, its item given back: %s',
    @lang = 'us_english',
    @replace = 'replace';
GO
