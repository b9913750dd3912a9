SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC sys.sp_addmessage
    @msgnum = 735724,
    @severity = 16,
    @msgtext = N'relq: %s: batch %d is sealed: no item joins it and it is not sealed again',
    @lang = 'us_english',
    @replace = 'replace';
GO
