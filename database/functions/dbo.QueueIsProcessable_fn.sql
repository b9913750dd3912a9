SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueIsProcessable_fn: can an item in this state be picked up for processing?
   @Status: the state. Seed 000's classification, exactly. */
CREATE OR ALTER FUNCTION dbo.QueueIsProcessable_fn(@Status dbo.QueueState)
RETURNS BIT
AS
BEGIN
    IF @Status IN ('Pending', 'Paused', 'Error')
        RETURN 1;
    RETURN 0;
END;
GO
