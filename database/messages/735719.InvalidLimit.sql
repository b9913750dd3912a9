SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC sys.sp_addmessage
    @msgnum = 735719,
    @severity = 16,
    @msgtext = N'relq: %s: %s: a limit is a whole number from 1 to 32767, or NULL for none',
    @lang = 'us_english',
    @replace = 'replace';
GO
