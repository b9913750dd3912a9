SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueIsProcessable_fn: can an item in this state be picked up for processing?
   Seed 000's classification, exactly: Paused counts, because a paused item
   will be processed once resumed; the claim itself (Next_) takes only Pending
   and Error items, and a paused one must first go back to Pending.
   @Status: the state. */
CREATE OR ALTER FUNCTION dbo.QueueIsProcessable_fn(@Status dbo.QueueState)
RETURNS BIT
AS
BEGIN
    IF @Status IN ('Pending', 'Paused', 'Error')
        RETURN 1;
    RETURN 0;
END;
GO
