SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC sys.sp_addmessage
    @msgnum = 735716,
    @severity = 16,
    @msgtext = N'relq: %s: dead letter %s is no longer there: another operator has replayed or deleted it',
    @lang = 'us_english',
    @replace = 'replace';
GO
