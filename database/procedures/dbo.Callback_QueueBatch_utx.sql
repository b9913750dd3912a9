SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Callback_QueueBatch_utx: enqueues a finished batch's callback, inside the caller's
   transaction, which holds the batch row's exclusive lock (dbo.Count_QueueBatch_utx and
   dbo.Seal_QueueBatch_trx call it right after the UPDATE that set the batch's
   FinishedAt, and only then): one item of CallbackType in the job queue CallbackQueue
   (SyncQueue), through that queue's
   Add_ procedure, on CallbackEntityKey (NULL: 'QueueBatch:<BatchID>'), its Payload the
   batch's CallbackPayload (a JSON object; NULL: {}) with "batch" set to the batch as it
   is now: {BatchID, Name, Total, Completed, PartiallyCompleted, Failed, Cancelled,
   Terminated, OpenedAt, SealedAt, FinishedAt} (JSON_MODIFY with JSON_QUERY, so that it
   goes in as an object, not a string: https://learn.microsoft.com/sql/t-sql/functions/json-modify-transact-sql).
   Then the batch's CallbackEnqueuedAt is the callback's key.
   @BatchID: the batch.
   @Caller: the procedure that finished the batch, named in the errors.
   Returns 0; 1 on error: 735702 outside a transaction, 735703 the batch's callback was
   enqueued already, 735707 the batch names no job queue of this database, 735723 no
   such batch, and the errors of the callback queue's Add_ (735707 a type it no longer
   has). On error the caller rolls back. */
CREATE OR ALTER PROCEDURE dbo.Callback_QueueBatch_utx
    @BatchID INT,
    @Caller NVARCHAR(128)
AS
BEGIN
    SET NOCOUNT ON;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED; -- SQL Server restores the caller's level on return
    DECLARE @Proc NVARCHAR(128) = ISNULL(@Caller, N'dbo.Callback_QueueBatch_utx');
    DECLARE @Queue VARCHAR(128);
    DECLARE @Type VARCHAR(50);
    DECLARE @EntityKey NVARCHAR(200);
    DECLARE @Payload NVARCHAR(MAX);
    DECLARE @Batch NVARCHAR(MAX);
    DECLARE @CallbackAt DATETIME2(7);
    DECLARE @SyncQueueItems dbo.SyncQueueItemList;
    DECLARE @RetCode INT;
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    IF (@@TRANCOUNT = 0)
        BEGIN
            RAISERROR (735702, 16, 1, N'dbo.Callback_QueueBatch_utx');
            GOTO EXIT_ERROR;
        END;

    SELECT
        @Queue = b.CallbackQueue,
        @Type = b.CallbackType,
        @EntityKey = ISNULL(b.CallbackEntityKey, N'QueueBatch:' + CAST(b.BatchID AS NVARCHAR(12))),
        @Payload = ISNULL(b.CallbackPayload, N'{}')
    FROM dbo.QueueBatch AS b WITH (ROWLOCK, READCOMMITTEDLOCK)
    WHERE b.BatchID = @BatchID;
    IF (@Queue IS NULL)
        BEGIN
            RAISERROR (735723, 16, 1, @Proc, @BatchID);
            GOTO EXIT_ERROR;
        END;
    SET @Batch = (
        SELECT
            b.BatchID,
            b.[Name],
            b.Total,
            b.Completed,
            b.PartiallyCompleted,
            b.Failed,
            b.Cancelled,
            b.Terminated,
            b.OpenedAt,
            b.SealedAt,
            b.FinishedAt
        FROM dbo.QueueBatch AS b WITH (READCOMMITTEDLOCK)
        WHERE b.BatchID = @BatchID
        FOR JSON PATH, INCLUDE_NULL_VALUES, WITHOUT_ARRAY_WRAPPER
    );
    SET @Payload = JSON_MODIFY(@Payload, '$.batch', JSON_QUERY(@Batch));

    IF (@Queue = 'SyncQueue')
        BEGIN
            INSERT INTO @SyncQueueItems (ItemNo, [Type], EntityKey, Payload)
            VALUES (0, @Type, @EntityKey, @Payload);
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_ERROR;
            EXEC @RetCode = dbo.Add_SyncQueue_utx
                @Items = @SyncQueueItems,
                @FirstEnqueuedAt = @CallbackAt OUTPUT;
            SELECT @ErrNo = @@ERROR;
            IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_ERROR;
        END;
    IF (@CallbackAt IS NULL)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'the batch''s CallbackQueue is no job queue of this database');
            GOTO EXIT_ERROR;
        END;

    UPDATE b
    SET b.CallbackEnqueuedAt = @CallbackAt
    FROM dbo.QueueBatch AS b WITH (ROWLOCK, READCOMMITTEDLOCK)
    WHERE b.BatchID = @BatchID AND b.CallbackEnqueuedAt IS NULL;
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;
    IF (@RowCnt <> 1)
        BEGIN
            RAISERROR (735703, 16, 1, @Proc, 1, @RowCnt);
            GOTO EXIT_ERROR;
        END;
    RETURN 0;

    EXIT_ERROR:
    RETURN 1;
END;
GO
