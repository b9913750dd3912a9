SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueNextKey_fn: the next key or concurrency token after @After: now (UTC),
   or 100 ns past @After when now is not later (same clock tick, or a clock
   that stepped back). Keys and tokens therefore only ever move forward.
   @After: the last key handed out, or the token being replaced (NULL: none). */
CREATE OR ALTER FUNCTION dbo.QueueNextKey_fn(@After dbo.[_Timestamp])
RETURNS DATETIME2(7)
AS
BEGIN
    DECLARE @Now DATETIME2(7) = SYSUTCDATETIME();
    IF @After IS NULL OR @Now > @After
        RETURN @Now;
    RETURN DATEADD(NANOSECOND, 100, @After);
END;
GO
