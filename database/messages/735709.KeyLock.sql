SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC sys.sp_addmessage
    @msgnum = 735709,
    @severity = 16,
    @msgtext = N'relq: %s: could not take the enqueue lock on %s (sp_getapplock returned %d)',
    @lang = 'us_english',
    @replace = 'replace';
GO
