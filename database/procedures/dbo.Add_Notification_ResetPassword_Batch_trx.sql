SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Add_Notification_ResetPassword_Batch_trx: enqueues password-reset
   notifications in a transaction of its own, all of them or none; the rules are
   dbo.Add_Notification_ResetPassword_Batch_utx's. One notification is a one-row @Items.
   @Items: the notifications (dbo.Notification_ResetPasswordItemList), at most 4,000.
   @BatchID: the open batch (dbo.Open_QueueBatch_trx) the inserted notifications join;
     NULL (the default): none.
   Returns 0 with one row per item, in ItemNo order (EnqueuedAt, ItemNo,
   IsDuplicate): a duplicate's EnqueuedAt is the key of the unfinished
   notification that carries its DedupKey; 1 on error: 735701 inside a transaction
   or with IMPLICIT_TRANSACTIONS ON, and the errors of
   dbo.Add_Notification_ResetPassword_Batch_utx (735707 names the item). */
CREATE OR ALTER PROCEDURE dbo.Add_Notification_ResetPassword_Batch_trx
    @Items dbo.Notification_ResetPasswordItemList READONLY,
    @BatchID INT = NULL
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    -- relq's locking hints assume READ COMMITTED, whatever the connection's default.
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
    DECLARE @Enqueued NVARCHAR(MAX);
    DECLARE @RetCode INT;
    DECLARE @ErrNo INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Add_Notification_ResetPassword_Batch_trx');
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Add_ResetPassword_Batch;
    EXEC @RetCode = dbo.Add_Notification_ResetPassword_Batch_utx
        @Items = @Items,
        @Enqueued = @Enqueued OUTPUT,
        @BatchID = @BatchID;
    SELECT @ErrNo = @@ERROR;
    IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_TRANSACTION;
    COMMIT TRANSACTION Add_ResetPassword_Batch;

    SELECT
        e.EnqueuedAt,
        e.ItemNo,
        e.IsDuplicate
    FROM OPENJSON (@Enqueued) WITH (ItemNo INT, EnqueuedAt DATETIME2(7), IsDuplicate BIT) AS e
    ORDER BY e.ItemNo;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Add_ResetPassword_Batch;

    EXIT_ERROR:
    RETURN 1;
END;
GO
