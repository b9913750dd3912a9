SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC sys.sp_addmessage
    @msgnum = 735723,
    @severity = 16,
    @msgtext = N'relq: %s: no batch %d (dbo.QueueBatch)',
    @lang = 'us_english',
    @replace = 'replace';
GO
