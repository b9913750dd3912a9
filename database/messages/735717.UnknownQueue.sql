SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC sys.sp_addmessage
    @msgnum = 735717,
    @severity = 16,
    @msgtext = N'relq: %s: %s is not a relational queue or one of its job types (dbo.QueueControl_V lists them)',
    @lang = 'us_english',
    @replace = 'replace';
GO
