SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueCanTransition_fn: is going from one state to another legal? The answer is
   the rows of dbo.QueueTransition.
   @FromStatus: the item's current state.
   @ToStatus: the state asked for. */
CREATE OR ALTER FUNCTION dbo.QueueCanTransition_fn(@FromStatus dbo.QueueState, @ToStatus dbo.QueueState)
RETURNS BIT
AS
BEGIN
    IF
        EXISTS (
            SELECT 1 FROM dbo.QueueTransition AS t
            WHERE t.FromStatus = @FromStatus AND t.ToStatus = @ToStatus
        )
        RETURN 1;
    RETURN 0;
END;
GO
