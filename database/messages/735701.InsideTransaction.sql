SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC sys.sp_addmessage
    @msgnum = 735701,
    @severity = 16,
    @msgtext = N'relq: %s owns its transaction: call it outside any transaction, or call its _utx form inside yours',
    @lang = 'us_english',
    @replace = 'replace';
GO
