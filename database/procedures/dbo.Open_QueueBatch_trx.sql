SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Open_QueueBatch_trx: opens a batch (dbo.QueueBatch) in a transaction of its own
   and names its callback: the job the batch enqueues, once, when it is sealed and its
   last item has reached a final state. Items join it when an Add_ procedure is given its
   @BatchID; dbo.Seal_QueueBatch_trx closes it to new items, so the callback cannot fire
   while items are still being added.
   @CallbackQueue: the job queue the callback goes to: SyncQueue.
   @CallbackType: its job type, a row of that queue's type table; not a type whose subtype
     table has required columns: the callback is enqueued with none of them.
   @CallbackEntityKey: the callback's EntityKey, 1 to 200 characters; NULL (the default):
     'QueueBatch:<BatchID>'.
   @CallbackPayload: a JSON object the callback's Payload starts from; its "batch" key is
     set to the batch's counts when the callback is enqueued. NULL (the default): {}.
   @Name: what the batch is, for people (the dashboard), 1 to 200 characters; NULL: none.
   @BatchID: OUTPUT, the new batch's key.
   Returns 0 with one row (BatchID, OpenedAt); 1 on error: 735701 inside a transaction,
   735707 a missing or invalid parameter. */
CREATE OR ALTER PROCEDURE dbo.Open_QueueBatch_trx
    @CallbackQueue VARCHAR(400),
    @CallbackType VARCHAR(400),
    @CallbackEntityKey NVARCHAR(400) = NULL,
    @CallbackPayload NVARCHAR(MAX) = NULL,
    @Name NVARCHAR(400) = NULL,
    @BatchID INT = NULL OUTPUT
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Open_QueueBatch_trx';
    DECLARE
        @BadCallback NVARCHAR(200) = N'@CallbackQueue must name a job queue, and @CallbackType one of its '
        + N'job types that needs no subtype columns';
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    SET @BatchID = NULL;
    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Open_QueueBatch_trx');
            GOTO EXIT_ERROR;
        END;
    IF
        NOT (
            (
                @CallbackQueue = 'SyncQueue'
                AND EXISTS (
                    SELECT 1 FROM dbo.SyncQueueType AS t
                    WHERE t.[Type] = @CallbackType
                )
            )
            OR
            1 = 0
        )
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, @BadCallback);
            GOTO EXIT_ERROR;
        END;
    IF (
        @CallbackEntityKey IS NOT NULL
        AND (LTRIM(RTRIM(@CallbackEntityKey)) = N'' OR LEN(@CallbackEntityKey) > 200)
    )
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@CallbackEntityKey must be 1 to 200 characters, or NULL');
            GOTO EXIT_ERROR;
        END;
    IF (
        @CallbackPayload IS NOT NULL
        AND (ISJSON(@CallbackPayload) = 0 OR LEFT(LTRIM(@CallbackPayload), 1) <> N'{')
    )
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@CallbackPayload must be a JSON object, or NULL');
            GOTO EXIT_ERROR;
        END;
    IF (@Name IS NOT NULL AND (LTRIM(RTRIM(@Name)) = N'' OR LEN(@Name) > 200))
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Name must be 1 to 200 characters, or NULL');
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Open_QueueBatch;
    INSERT INTO dbo.QueueBatch (CallbackQueue, CallbackType, CallbackEntityKey, CallbackPayload, [Name])
    VALUES (@CallbackQueue, @CallbackType, @CallbackEntityKey, @CallbackPayload, @Name);
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR,
        @BatchID = SCOPE_IDENTITY();
    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
    COMMIT TRANSACTION Open_QueueBatch;

    SELECT
        b.BatchID,
        b.OpenedAt
    FROM dbo.QueueBatch AS b
    WHERE b.BatchID = @BatchID;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Open_QueueBatch;
    SET @BatchID = NULL;

    EXIT_ERROR:
    RETURN 1;
END;
GO
