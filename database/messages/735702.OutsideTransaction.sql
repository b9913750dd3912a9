SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC sys.sp_addmessage
    @msgnum = 735702,
    @severity = 16,
    @msgtext = N'relq: %s runs inside the caller''s transaction: begin one first, or call its _trx form',
    @lang = 'us_english',
    @replace = 'replace';
GO
