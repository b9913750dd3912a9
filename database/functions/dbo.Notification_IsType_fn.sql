SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Notification_IsType_fn: is the notification with this key of this type? The CHECK
   of each subtype table of dbo.Notification asks it.
   @EnqueuedAt: the item's key.
   @Type: the job type its subtype table stands for. */
CREATE OR ALTER FUNCTION dbo.Notification_IsType_fn(@EnqueuedAt dbo.[_Timestamp], @Type dbo.[_Type])
RETURNS BIT
AS
BEGIN
    IF
        EXISTS (
            SELECT 1 FROM dbo.Notification AS n
            WHERE n.EnqueuedAt = @EnqueuedAt AND n.[Type] = @Type
        )
        RETURN 1;
    RETURN 0;
END;
GO
