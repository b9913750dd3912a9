SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueNextKey_fn: the next key or concurrency token after @After: now
   (UTC), or a microsecond past @After when now is not later (same clock tick,
   or a clock that stepped back). Keys and tokens therefore only ever move
   forward. They are whole microseconds, though DATETIME2(7) could hold 100 ns:
   a token must survive a round trip through every client, and Python's
   datetime stops at microseconds.
   @After: the last key handed out, or the token being replaced (NULL: none). */
CREATE OR ALTER FUNCTION dbo.QueueNextKey_fn(@After dbo.[_Timestamp])
RETURNS DATETIME2(7)
AS
BEGIN
    DECLARE @Now DATETIME2(6) = SYSUTCDATETIME();
    IF @After IS NULL OR @Now > @After
        RETURN @Now;
    -- rounding to whole microseconds after adding one stays strictly later
    RETURN CAST(DATEADD(MICROSECOND, 1, @After) AS DATETIME2(6));
END;
GO
