SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.RelqErrorNumber_fn: the number of an error as relq raised it. On a server where
   relq's messages are not registered (a replica after an availability-group failover,
   a restore or an attach elsewhere: messages live in each server's master, which neither
   carries), RAISERROR of a relq number reaches the caller as error 18054, "Error %d,
   severity %d, state %d was raised, but no message with that error number was found in
   sys.messages" (learn.microsoft.com/sql/relational-databases/errors-events/
   database-engine-events-and-errors-18000-to-18999).
   Its text carries the number raised; of the numbers in it, only that one can lie in
   relq's range (a severity is at most 25, a state at most 255), so the rule holds in
   every session language. Any other error is its own number.
   @Number: ERROR_NUMBER() in a CATCH.
   @Message: ERROR_MESSAGE() in the same CATCH.
   WITH SCHEMABINDING, as it reads no table (dbo.QueueNextKey_fn's header says why). */
CREATE OR ALTER FUNCTION dbo.RelqErrorNumber_fn(@Number INT, @Message NVARCHAR(4000))
RETURNS INT
WITH SCHEMABINDING
AS
BEGIN
    -- A relq number: 7357 and two digits, from 735701 to 735799, not inside a longer number.
    DECLARE @At INT = PATINDEX(N'%[^0-9]7357[0-9][0-9][^0-9]%', N' ' + ISNULL(@Message, N'') + N' ');
    IF @Number = 18054 AND @At > 0 AND SUBSTRING(@Message, @At, 6) <> N'735700'
        RETURN CAST(SUBSTRING(@Message, @At, 6) AS INT);
    RETURN @Number;
END;
GO
