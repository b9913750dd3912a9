SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueNextKey_fn: the next key or concurrency token after @After: now
   (UTC), or a microsecond past @After when now is not later (same clock tick,
   or a clock that stepped back). Keys and tokens therefore only ever move
   forward. They are whole microseconds, though DATETIME2(7) could hold 100 ns:
   a token must survive a round trip through every client, and Python's
   datetime stops at microseconds.
   @After: the last key handed out, or the token being replaced (NULL: none).
   WITH SCHEMABINDING, as it reads no table: unbound, SQL Server assumes that a function reads
   data, and the claim's UPDATE ... SET UpdatedAt = dbo.QueueNextKey_fn(UpdatedAt) may get a
   spool it does not need
   (https://learn.microsoft.com/archive/blogs/ianjo/make-functions-schema-bound). A bound
   function may call only bound ones
   (https://learn.microsoft.com/sql/t-sql/statements/create-function-transact-sql); the build's
   check schemabinding keeps this one from calling any.
   SYSUTCDATETIME() leaves it nondeterministic, which binding allows.
   Its parameter's type dbo.[_Timestamp] cannot be dropped while this function uses it, bound or
   not: a migration that replaces the type alters or drops this function first
   (https://learn.microsoft.com/sql/t-sql/statements/drop-type-transact-sql). */
CREATE OR ALTER FUNCTION dbo.QueueNextKey_fn(@After dbo.[_Timestamp])
RETURNS DATETIME2(7)
WITH SCHEMABINDING
AS
BEGIN
    DECLARE @Now DATETIME2(6) = SYSUTCDATETIME();
    IF @After IS NULL OR @Now > @After
        RETURN @Now;
    -- rounding to whole microseconds after adding one stays strictly later
    RETURN CAST(DATEADD(MICROSECOND, 1, @After) AS DATETIME2(6));
END;
GO
