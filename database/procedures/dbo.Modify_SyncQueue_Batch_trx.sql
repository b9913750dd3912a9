SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Modify_SyncQueue_Batch_trx: reports many SyncQueue outcomes in one call
   and one transaction, each by the rules of dbo.Modify_SyncQueue_utx, in key
   order (so two batch reporters lock rows in the same order and cannot deadlock).
   A batch with Pending outcomes for Failed items (retries by hand) takes the
   locks of those items' DedupKeys first, before any row, as Add_ and the Retry_
   control do (dbo.Modify_SyncQueue_utx takes one for such an outcome, which
   would be after the rows of the outcomes before it): it then keeps an enqueue
   of one of those DedupKeys waiting until it commits, and no other.
   All or nothing: the first refused outcome (an item taken over, a stale token,
   an illegal move) rolls the whole batch back and raises that outcome's error
   (which names the item, but for a bad parameter, 735707); the caller may then
   report the others one by one.
   @Outcomes: the reports, 1 to 1000 rows (dbo.SyncQueueOutcomeList).
   Returns 0 with one row per item (EnqueuedAt, UpdatedAt, Status, ScheduledFor)
   from dbo.Worker_SyncQueue_V, in key order; 1 on error: 735701 inside a
   transaction, 735707 an empty or too big batch, 735709 a DedupKey's lock not
   granted within 10 s, and the errors of
   dbo.Modify_SyncQueue_utx. */
CREATE OR ALTER PROCEDURE dbo.Modify_SyncQueue_Batch_trx
    @Outcomes dbo.SyncQueueOutcomeList READONLY
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    -- relq's locking hints assume READ COMMITTED, whatever the connection's default.
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Modify_SyncQueue_Batch_trx';
    DECLARE @Count INT;
    DECLARE @EnqueuedAt dbo.[_Timestamp];
    DECLARE @UpdatedAt dbo.[_Timestamp];
    DECLARE @Status dbo.QueueState;
    DECLARE @Step VARCHAR(400);
    DECLARE @Response dbo.WebResponse;
    DECLARE @Error dbo.WebResponse;
    DECLARE @ScheduledFor dbo.[_Timestamp];
    DECLARE @RetCode INT;
    DECLARE @ItemKeys dbo.ItemKeyList;
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Modify_SyncQueue_Batch_trx');
            GOTO EXIT_ERROR;
        END;
    SELECT @Count = COUNT(*) FROM @Outcomes;
    IF (@Count = 0 OR @Count > 1000)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Outcomes must hold 1 to 1,000 reports');
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Modify_SyncQueue_Batch;
    INSERT INTO @ItemKeys (KeyColumn, ItemKey)
    SELECT
        'DedupKey' AS KeyColumn,
        q.DedupKey
    FROM @Outcomes AS o
    INNER JOIN dbo.SyncQueue AS q ON o.EnqueuedAt = q.EnqueuedAt
    WHERE o.[Status] = 'Pending' AND q.DedupKey IS NOT NULL AND q.[Status] = 'Failed';
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
    IF (@RowCnt > 0)
        BEGIN
            EXEC @RetCode = dbo.Lock_ItemKeys_utx
                @Queue = N'dbo.SyncQueue',
                @ItemKeys = @ItemKeys,
                @Caller = @Proc;
            SELECT @ErrNo = @@ERROR;
            IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_TRANSACTION;
        END;
    SELECT @EnqueuedAt = MIN(o.EnqueuedAt) FROM @Outcomes AS o;
    WHILE (@EnqueuedAt IS NOT NULL)
        BEGIN
            SELECT
                @UpdatedAt = o.UpdatedAt,
                @Status = o.[Status],
                @Step = o.[Step],
                @Response = o.Response,
                @Error = o.Error,
                @ScheduledFor = o.ScheduledFor
            FROM @Outcomes AS o
            WHERE o.EnqueuedAt = @EnqueuedAt;
            EXEC @RetCode = dbo.Modify_SyncQueue_utx
                @EnqueuedAt = @EnqueuedAt,
                @UpdatedAt = @UpdatedAt,
                @Status = @Status,
                @Step = @Step,
                @Response = @Response,
                @Error = @Error,
                @ScheduledFor = @ScheduledFor;
            SELECT @ErrNo = @@ERROR;
            IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_TRANSACTION;
            SELECT @EnqueuedAt = MIN(o.EnqueuedAt) FROM @Outcomes AS o
            WHERE o.EnqueuedAt > @EnqueuedAt;
        END;
    COMMIT TRANSACTION Modify_SyncQueue_Batch;

    SELECT
        v.EnqueuedAt,
        v.UpdatedAt,
        v.[Status],
        v.ScheduledFor
    FROM @Outcomes AS o
    INNER JOIN dbo.Worker_SyncQueue_V AS v ON o.EnqueuedAt = v.EnqueuedAt
    ORDER BY v.EnqueuedAt;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Modify_SyncQueue_Batch;

    EXIT_ERROR:
    RETURN 1;
END;
GO
