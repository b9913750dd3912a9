SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Receive_PendingQueue_utx: receives up to @BatchSize messages from
   dbo.PendingQueue inside the caller's transaction, only due messages (DueAt passed),
   earliest due first (READPAST). A receive is a delete that returns the rows it deleted
   (DELETE ... OUTPUT), so two consumers never get the same message; if the caller rolls
   back, the messages are back in the queue (at-least-once, when the caller commits
   after its work).
   @BatchSize: how many messages at most, 1 to 1000 (default 1).
   Returns 0 with one row per message (Id, DueAt, Payload, EnqueuedAt), none when the
   queue is empty; 1 on error: 735702 outside a transaction, 735707 a bad @BatchSize. */
CREATE OR ALTER PROCEDURE dbo.Receive_PendingQueue_utx
    @BatchSize INT = 1
AS
BEGIN
    SET NOCOUNT ON;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED; -- SQL Server restores the caller's level on return
    DECLARE @Proc NVARCHAR(128) = N'dbo.Receive_PendingQueue_utx';
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    IF (@@TRANCOUNT = 0)
        BEGIN
            RAISERROR (735702, 16, 1, N'dbo.Receive_PendingQueue_utx');
            GOTO EXIT_ERROR;
        END;
    IF (@BatchSize IS NULL OR @BatchSize < 1 OR @BatchSize > 1000)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@BatchSize must be 1 to 1000');
            GOTO EXIT_ERROR;
        END;

    WITH due AS (
        SELECT TOP (@BatchSize)
            q.Id,
            q.DueAt,
            q.Payload,
            q.EnqueuedAt
        FROM dbo.PendingQueue AS q WITH (ROWLOCK, READPAST, READCOMMITTEDLOCK)
        WHERE q.DueAt <= @Now
        ORDER BY q.DueAt, q.Id
    )

    DELETE FROM due
    OUTPUT
        DELETED.Id,
        DELETED.DueAt,
        DELETED.Payload,
        DELETED.EnqueuedAt;
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;
    RETURN 0;

    EXIT_ERROR:
    RETURN 1;
END;
GO
