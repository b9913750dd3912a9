SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Next_Notification_utx: claims up to @BatchSize Notification items for the
   worker @LockedBy inside the caller's transaction (seeds 000, 001 and 003):
   1. Items in Processing whose lease ran out (their worker died) or that
      @LockedBy itself holds (it restarted) are claimed again, while attempts are
      left ('notification.maxAttempts', default 3). Their open attempt ends as an
      Error saying who abandoned it; the late worker's report is then refused (735710).
   2. The rest of the batch: Pending and Error items that are due, highest
      Priority first, then earliest ScheduledFor, then enqueue order.
   3. Such abandoned items on their last attempt become Failed instead (at most
      100 a call), and so do the Error items at or past the limit among the first
      @BatchSize + 16 due items of each band the claim reads (there after the limit
      was lowered: a report fails an item on its last attempt itself); they keep
      their last error, no attempt row records it, and their token moves. One of a
      batch counts in its batch (dbo.Count_QueueBatch_utx), which enqueues the
      batch's callback when it was the last.
   The due read costs the due work, not the table: IX_Notification_Due is keyed
   ([Type], [Priority] DESC, ScheduledFor). The claim walks the Priority levels
   from the highest down, each found by one seek a type, and reads a level's
   bands (one per type) with one seek each, ScheduledFor <= now in the seek's
   range, merged in claim order; it stops at the level where @BatchSize + 16 are
   read. Items scheduled for later and other types' items are never read; a level
   whose items are all scheduled for later costs its seeks only, so a claim costs
   about three seeks a type for every Priority level in use above the due work.
   What a band read still passes over: items past the attempt limit before the
   claimable ones (until they are failed as above; a Pending one, paused in
   Error and resumed after the limit came down, waits until it is cancelled or
   the limit raised),
   and the later due items of a group whose earlier item is unfinished.
   An item of an ordered group (GroupKey) is claimed only when fewer than the
   queue's group limit (dbo.QueueControl's GroupLimit, default 1) of the unfinished
   items of its group were enqueued before it: with 1, a group's items run one at a
   time, in order, even within one batch; with N, at most N at once, the earliest
   first. That needs no lock of its own: whether an item may be claimed depends only
   on how many earlier items of its group are unfinished, which a claim does not
   change (Pending and Processing are both unfinished) and which only falls (an item
   enqueued later has a larger key, a group's items being committed in key order),
   so an item that was claimable stays so. Of the k-th item of a group in
   Processing, counted in key order, the k - 1 before it are unfinished now, hence
   were when it was claimed: k - 1 < N, so never N + 1. Except after a Retry_: it
   makes a finished earlier item unfinished again; from then on it counts against
   the items after it, but those already running go on, and it may itself be
   claimed while they run (a retry is an operator's step out of order).
   Pause and limits (dbo.QueueControl, set by dbo.Pause_Queue_trx,
   dbo.Resume_Queue_trx and dbo.Limit_Queue_trx without a deploy): the claim first
   lists the types it may take, the queue's (or @Type) less the paused ones, and
   none while the queue is paused; every read below, the abandoned items' included,
   takes only those types, so a claim reads by seeks (one a type) and never a paused
   type's items.
   The rows are read without a lock: a pause applies to the claims that begin after
   it commits, and items already in Processing finish normally. A type with a limit
   (TypeLimit N) has at most N items in Processing, across all claims: the claim
   locks the type's row WITH (UPDLOCK, HOLDLOCK, ROWLOCK), held until the transaction
   ends (the table hints page below: UPDLOCK takes update locks held until the
   transaction completes; HOLDLOCK scans with
   SERIALIZABLE's semantics, by locks, not row versions, also under
   READ_COMMITTED_SNAPSHOT), so the claims of one limited type run their counting
   and claiming one at a time (an update lock is
   incompatible with another update lock: "Lock compatibility" in
   https://learn.microsoft.com/sql/relational-databases/sql-server-transaction-locking-and-row-versioning-guide).
   Under the lock it counts the type's items in Processing and takes at most the
   slots left for items that are not in Processing yet. The claim before it committed its items before it
   let the lock go, so the count sees them: under locking READ COMMITTED as any
   committed row, under READ_COMMITTED_SNAPSHOT because a statement reads the data
   committed before it began (same guide, "Behavior in summary"); a report that
   ends an item but has not committed yet still counts, which errs on the safe side.
   Limited types are locked one after another in key order, before any item, so
   two claims cannot wait for each other's type; unlimited types take no lock, and
   their claims never wait for one. An item in Processing holds its slot until it
   leaves Processing, also after its lease ran out: taking it over (step 1, the
   caller's own items after a restart included) moves no item into Processing, so
   it needs no slot, while a new item does. So only a claim, under the lock, ever
   adds an item of the type to Processing, and the count never passes N, even when
   a worker renews a lease that ran out (Extend_, a step's report) before anyone
   took its item over: the slot was never given away. A dead worker's items hold
   their slots until a claim of the type takes them over (the first thing it does)
   or fails them on their last attempt. A limit set or lowered applies to the
   claims that begin after it commits (items above it finish).
   Cost: a limited type's claims take turns for the length of their transactions;
   each holds the lock while it reads dbo.QueueControl (one seek a limited type)
   and counts the type's items in flight (a range of IX_Notification_Lease, which
   holds the items in Processing only and carries their type), then claims.
   A claim sets Processing, AttemptNum + 1,
   StartedAt now, LockedBy, LeaseUntil now + 'notification.leaseSeconds' (default
   300) and a new token, and writes the attempt's row in dbo.NotificationAttempt.
   The candidates are read first, holding no lock, then claimed in one UPDATE
   under UPDLOCK and ROWLOCK; READPAST skips rows other claims hold, so claims
   do not wait on each other, except that a group's check waits for a write to
   an earlier item of that group to commit. It runs at READ COMMITTED whatever
   the caller's level: SQL Server refuses READPAST under SERIALIZABLE and
   SNAPSHOT. Its reads that skip or wait also carry READCOMMITTEDLOCK, so they
   lock under READ_COMMITTED_SNAPSHOT too, where a plain read would see the last
   committed version: a row another claim is taking would not be skipped, nor a
   group's check wait (the READPAST paragraph of
   https://learn.microsoft.com/sql/t-sql/queries/hints-transact-sql-table).
   @LockedBy: the worker slot claiming (dbo.WorkerName). A slot claims only with
     nothing in hand: its own items in Processing count as abandoned (with @Type,
     those of that type only: a slot that claims one type at a time keeps its
     items of the others until their leases run out). NULL (the
     default, for a caller that names no worker): the claim is recorded as held by
     HOST_NAME()/@@SPID and nothing is handed back after a restart.
   @BatchSize: how many items at most, 1 to 1000 (default 1).
   @EnqueuedAt: OUTPUT, the first claimed item's key (in @Claimed's order);
     NULL when nothing is due.
   @UpdatedAt: OUTPUT, its new token, to pass to Modify_ or Extend_.
   @Claimed: OUTPUT, every claimed item as a JSON array of {EnqueuedAt, UpdatedAt}
     in claim order (items claimed again, then by Priority, ScheduledFor, key);
     read it with OPENJSON ... WITH (EnqueuedAt DATETIME2(7), UpdatedAt
     DATETIME2(7)). NULL when nothing is due.
   @Type: claim only items of this job type (a row of dbo.NotificationType), for a
     worker that knows one type only; NULL
     (the default): any type. Step 3 fails the dead items of every type.
   Returns 0, also when nothing is due; 1 on error: 735702 outside a transaction,
   735707 a blank or over-long @LockedBy, a bad @BatchSize or an unknown @Type;
   735723 a failed item's batch is gone, and the errors of a batch's callback.
   On error the caller rolls back. */
CREATE OR ALTER PROCEDURE dbo.Next_Notification_utx
    @LockedBy NVARCHAR(400) = NULL,
    @BatchSize INT = 1,
    @EnqueuedAt dbo.[_Timestamp] = NULL OUTPUT,
    @UpdatedAt dbo.[_Timestamp] = NULL OUTPUT,
    @Claimed NVARCHAR(MAX) = NULL OUTPUT,
    @Type VARCHAR(400) = NULL
AS
BEGIN
    SET NOCOUNT ON;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED; -- SQL Server restores the caller's level on return
    DECLARE @Proc NVARCHAR(128) = N'dbo.Next_Notification_utx';
    DECLARE @Now dbo.[_Timestamp] = CAST(SYSUTCDATETIME() AS DATETIME2(6));
    DECLARE @MaxAttempts INT = dbo.AppSettingInt_fn('notification.maxAttempts');
    DECLARE @LeaseUntil dbo.[_Timestamp] = DATEADD(
        SECOND, dbo.AppSettingInt_fn('notification.leaseSeconds'), @Now
    );
    DECLARE @Taken TABLE (
        EnqueuedAt DATETIME2(7) NOT NULL PRIMARY KEY,
        UpdatedAt DATETIME2(7) NOT NULL,
        AttemptNum SMALLINT NOT NULL,
        [Step] VARCHAR(50) NULL,
        [Status] VARCHAR(20) NOT NULL,
        [Priority] SMALLINT NOT NULL,
        ScheduledFor DATETIME2(7) NOT NULL,
        AbandonedBy NVARCHAR(128) NULL,
        BatchID INT NULL
    );
    -- A row can be read twice (both reads, or one while the row moves in its index):
    -- the key keeps the first; ordered by ClaimOrder, the claim stops at its batch. The
    -- row dropped raises 3604 "Duplicate key was ignored." (severity 10, not an error),
    -- which the two inserts below do not count as their failure.
    DECLARE @Candidates TABLE (
        EnqueuedAt DATETIME2(7) NOT NULL PRIMARY KEY NONCLUSTERED WITH (IGNORE_DUP_KEY = ON),
        UpdatedAt DATETIME2(7) NOT NULL,
        [Type] VARCHAR(50) NOT NULL,
        IsTakeover BIT NOT NULL, -- in Processing already (step 1): it needs no slot of a limit
        ClaimOrder BIGINT NOT NULL,
        INDEX IX_Candidates_Order CLUSTERED (ClaimOrder)
    );
    -- Error items at or past the attempt limit, met at the front of a band: failed below.
    DECLARE @Exhausted TABLE (
        EnqueuedAt DATETIME2(7) NOT NULL PRIMARY KEY WITH (IGNORE_DUP_KEY = ON)
    );
    -- The types this claim may take (dbo.QueueControl): the queue's, or @Type, less the
    -- paused ones; Free: the slots a limited type has left for new items (0: it may only
    -- take over its own items in Processing).
    DECLARE @Claimable TABLE (
        [Type] VARCHAR(50) NOT NULL PRIMARY KEY,
        TypeLimit SMALLINT NULL,
        Free INT NULL
    );
    DECLARE @GroupLimit INT; -- how many items of one GroupKey may be in Processing
    DECLARE @Limited VARCHAR(50); -- the limited type whose row is locked now, in key order
    DECLARE @Limit SMALLINT;
    DECLARE @Held INT; -- a limited type's items in Processing: the slots they hold
    DECLARE @Want INT = @BatchSize + 16;
    DECLARE @Have INT = 0; -- due candidates read so far
    DECLARE @Level SMALLINT; -- the Priority whose bands are read now, from the highest down
    DECLARE @Next SMALLINT;
    DECLARE @Base BIGINT; -- the last ClaimOrder given so far
    DECLARE @Holder NVARCHAR(128) = ISNULL(
        @LockedBy, LEFT(ISNULL(HOST_NAME(), N''), 100) + N'/' + CAST(@@SPID AS NVARCHAR(10))
    );
    DECLARE @BatchCounts dbo.QueueBatchCountList;
    DECLARE @RetCode INT;
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    SELECT
        @EnqueuedAt = NULL,
        @UpdatedAt = NULL,
        @Claimed = NULL;
    IF (@@TRANCOUNT = 0)
        BEGIN
            RAISERROR (735702, 16, 1, N'dbo.Next_Notification_utx');
            GOTO EXIT_ERROR;
        END;
    IF (LTRIM(RTRIM(@LockedBy)) = N'' OR DATALENGTH(@LockedBy) > 256)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@LockedBy must name the worker slot in 1 to 128 characters');
            GOTO EXIT_ERROR;
        END;
    IF (@BatchSize IS NULL OR @BatchSize < 1 OR @BatchSize > 1000)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@BatchSize must be 1 to 1000');
            GOTO EXIT_ERROR;
        END;
    IF (
        @Type IS NOT NULL
        AND NOT EXISTS (
            SELECT 1 FROM dbo.NotificationType AS t
            WHERE t.[Type] = @Type
        )
    )
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Type must be a job type of dbo.NotificationType, or NULL for any');
            GOTO EXIT_ERROR;
        END;

    -- 0. What may be claimed: the types that are not paused, nor the queue; read without a
    -- lock (a pause or a limit counts from the claims that begin after it commits).
    INSERT INTO @Claimable ([Type], TypeLimit)
    SELECT
        t.[Type],
        c.TypeLimit
    FROM dbo.NotificationType AS t
    LEFT JOIN dbo.QueueControl AS c ON c.[Queue] = N'Notification' AND t.[Type] = c.[Type]
    WHERE
        (@Type IS NULL OR t.[Type] = @Type)
        AND (c.IsPaused IS NULL OR c.IsPaused = 0)
        AND NOT EXISTS (
            SELECT 1 FROM dbo.QueueControl AS p
            WHERE p.[Queue] = N'Notification' AND p.[Type] = '' AND p.IsPaused = 1
        );
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;
    SELECT @GroupLimit = MAX(c.GroupLimit)
    FROM dbo.QueueControl AS c
    WHERE c.[Queue] = N'Notification' AND c.[Type] = '';
    SET @GroupLimit = ISNULL(@GroupLimit, 1);

    -- A limited type's slots: its row locked (UPDLOCK, HOLDLOCK) to the end of the
    -- transaction, one type after another in key order, then its items in Processing
    -- counted, a lease that ran out or not; the limit and the pause read again under the lock. A type whose limit was
    -- removed meanwhile (NULL) is unlimited; one paused meanwhile has no slot.
    SELECT @Limited = MIN(k.[Type])
    FROM @Claimable AS k
    WHERE k.TypeLimit IS NOT NULL;
    WHILE (@Limited IS NOT NULL)
        BEGIN
            SET @Limit = NULL;
            SELECT @Limit = CASE WHEN c.IsPaused = 1 THEN 0 ELSE c.TypeLimit END
            FROM dbo.QueueControl AS c WITH (UPDLOCK, HOLDLOCK, ROWLOCK)
            WHERE c.[Queue] = N'Notification' AND c.[Type] = @Limited;
            SELECT @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_ERROR;
            SELECT @Held = COUNT(*)
            FROM dbo.Notification AS n
            WHERE n.[Status] = 'Processing' AND n.[Type] = @Limited;
            SELECT @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_ERROR;
            UPDATE @Claimable
            SET
                TypeLimit = @Limit,
                Free = CASE WHEN @Limit IS NULL THEN NULL WHEN @Limit > @Held THEN @Limit - @Held ELSE 0 END
            WHERE [Type] = @Limited;
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_ERROR;
            SELECT @Limited = MIN(k.[Type])
            FROM @Claimable AS k
            WHERE k.TypeLimit IS NOT NULL AND k.[Type] > @Limited;
        END;

    -- 1. The candidates, read without keeping a lock: READPAST skips the rows
    -- other transactions are writing, and nothing is held while a group check
    -- waits for a write to an earlier item of its group to commit. So a claim
    -- cannot close a deadlock, and a long blocked group cannot escalate to a
    -- table lock. A few more than asked for, since other claims read the same
    -- rows. First the abandoned items (dead workers', and the caller's own after
    -- a restart), then the due ones, most urgent first, of a group the next only.
    INSERT INTO @Candidates (EnqueuedAt, UpdatedAt, [Type], IsTakeover, ClaimOrder)
    SELECT TOP (@Want)
        n.EnqueuedAt,
        n.UpdatedAt,
        n.[Type],
        1 AS IsTakeover,
        ROW_NUMBER() OVER (ORDER BY n.LeaseUntil ASC) AS ClaimOrder
    FROM dbo.Notification AS n WITH (READPAST, READCOMMITTEDLOCK)
    WHERE
        n.[Status] = 'Processing'
        AND (n.LeaseUntil < @Now OR n.LockedBy = @LockedBy)
        AND n.AttemptNum < @MaxAttempts
        AND EXISTS (
            SELECT 1 FROM @Claimable AS k
            WHERE k.[Type] = n.[Type]
        )
    ORDER BY n.LeaseUntil ASC;
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo NOT IN (0, 3604)) GOTO EXIT_ERROR;
    SET @Have = @RowCnt;

    -- The due ones, one Priority level at a time from the highest down, until @Want are
    -- read. A level's bands are its (Type, Priority) ranges of IX_Notification_Due: each read
    -- is a seek whose range ends at ScheduledFor <= @Now. The first level: one seek a type.
    SELECT @Level = MAX(b.[Priority])
    FROM @Claimable AS t
    CROSS APPLY (
        SELECT TOP (1) n.[Priority]
        FROM dbo.Notification AS n WITH (READPAST, READCOMMITTEDLOCK)
        WHERE n.[Status] IN ('Pending', 'Error') AND n.[Type] = t.[Type]
        ORDER BY n.[Priority] DESC
    ) AS b
    WHERE t.Free IS NULL OR t.Free > 0; -- a type at its limit takes no new item
    SELECT @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;
    WHILE (@Level IS NOT NULL AND @Have < @Want)
        BEGIN
            -- Error items past the limit (a limit lowered since they failed) among the first
            -- @Want due items of each band that a claim could take or fail: Failed below, so
            -- that the read below, which passes over them, meets each only until then. From
            -- the index alone; the UPDATE checks them again under its lock.
            INSERT INTO @Exhausted (EnqueuedAt)
            SELECT f.EnqueuedAt
            FROM @Claimable AS t
            CROSS APPLY (
                SELECT TOP (@Want)
                    n.EnqueuedAt,
                    n.[Status],
                    n.AttemptNum
                FROM dbo.Notification AS n WITH (READPAST, READCOMMITTEDLOCK)
                WHERE
                    n.[Status] IN ('Pending', 'Error')
                    AND n.[Type] = t.[Type]
                    AND n.[Priority] = @Level
                    AND n.ScheduledFor <= @Now
                    AND (n.AttemptNum < @MaxAttempts OR n.[Status] = 'Error')
                    AND (
                        n.GroupKey IS NULL
                        -- Fewer than @GroupLimit earlier unfinished items of its group (with 1:
                        -- none). No READPAST here: an earlier item being written must be waited
                        -- for, not skipped (READCOMMITTEDLOCK: waited for under
                        -- READ_COMMITTED_SNAPSHOT too).
                        OR (
                            SELECT COUNT(*)
                            FROM (
                                SELECT TOP (@GroupLimit) e.EnqueuedAt
                                FROM dbo.Notification AS e WITH (READCOMMITTEDLOCK)
                                WHERE
                                    e.GroupKey = n.GroupKey
                                    AND e.GroupKey IS NOT NULL
                                    AND e.EnqueuedAt < n.EnqueuedAt
                                    AND e.[Status] IN ('Pending', 'Processing', 'Error', 'Paused')
                            ) AS g
                        ) < @GroupLimit
                    )
                ORDER BY n.ScheduledFor ASC, n.EnqueuedAt ASC
            ) AS f
            WHERE (t.Free IS NULL OR t.Free > 0) AND f.[Status] = 'Error' AND f.AttemptNum >= @MaxAttempts;
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo NOT IN (0, 3604)) GOTO EXIT_ERROR;

            -- After the last ClaimOrder given (a row dropped as read twice gave none).
            SELECT @Base = ISNULL(MAX(c.ClaimOrder), 0)
            FROM @Candidates AS c;
            IF (@Base < @Want) SET @Base = @Want;

            -- The level's due items with attempts left, of every band merged, in claim order.
            INSERT INTO @Candidates (EnqueuedAt, UpdatedAt, [Type], IsTakeover, ClaimOrder)
            SELECT TOP (@Want - @Have)
                d.EnqueuedAt,
                d.UpdatedAt,
                t.[Type],
                0 AS IsTakeover,
                @Base + ROW_NUMBER() OVER (ORDER BY d.ScheduledFor ASC, d.EnqueuedAt ASC) AS ClaimOrder
            FROM @Claimable AS t
            CROSS APPLY (
                SELECT TOP (@Want - @Have)
                    n.EnqueuedAt,
                    n.UpdatedAt,
                    n.ScheduledFor
                FROM dbo.Notification AS n WITH (READPAST, READCOMMITTEDLOCK)
                WHERE
                    n.[Status] IN ('Pending', 'Error')
                    AND n.[Type] = t.[Type]
                    AND n.[Priority] = @Level
                    AND n.ScheduledFor <= @Now
                    AND n.AttemptNum < @MaxAttempts
                    AND (
                        n.GroupKey IS NULL
                        -- Fewer than @GroupLimit earlier unfinished items of its group (with 1:
                        -- none). No READPAST here: an earlier item being written must be waited
                        -- for, not skipped (READCOMMITTEDLOCK: waited for under
                        -- READ_COMMITTED_SNAPSHOT too).
                        OR (
                            SELECT COUNT(*)
                            FROM (
                                SELECT TOP (@GroupLimit) e.EnqueuedAt
                                FROM dbo.Notification AS e WITH (READCOMMITTEDLOCK)
                                WHERE
                                    e.GroupKey = n.GroupKey
                                    AND e.GroupKey IS NOT NULL
                                    AND e.EnqueuedAt < n.EnqueuedAt
                                    AND e.[Status] IN ('Pending', 'Processing', 'Error', 'Paused')
                            ) AS g
                        ) < @GroupLimit
                    )
                ORDER BY n.ScheduledFor ASC, n.EnqueuedAt ASC
            ) AS d
            WHERE t.Free IS NULL OR t.Free > 0
            ORDER BY d.ScheduledFor ASC, d.EnqueuedAt ASC;
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo NOT IN (0, 3604)) GOTO EXIT_ERROR;
            SET @Have = @Have + @RowCnt;

            -- The next lower level with waiting items: one seek a type.
            SELECT @Next = MAX(b.[Priority])
            FROM @Claimable AS t
            CROSS APPLY (
                SELECT TOP (1) n.[Priority]
                FROM dbo.Notification AS n WITH (READPAST, READCOMMITTEDLOCK)
                WHERE
                    n.[Status] IN ('Pending', 'Error')
                    AND n.[Type] = t.[Type]
                    AND n.[Priority] < @Level
                ORDER BY n.[Priority] DESC
            ) AS b
            WHERE t.Free IS NULL OR t.Free > 0;
            SELECT @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_ERROR;
            SET @Level = @Next;
        END;

    -- A limited type's new candidates beyond its free slots, in claim order, are not
    -- claimed; takeovers hold their slots already.
    DELETE c
    FROM @Candidates AS c
    INNER JOIN @Claimable AS k ON c.[Type] = k.[Type]
    WHERE
        c.IsTakeover = 0
        AND k.Free IS NOT NULL
        AND k.Free < (
            SELECT COUNT(*) FROM @Candidates AS o
            WHERE o.[Type] = c.[Type] AND o.IsTakeover = 0 AND o.ClaimOrder <= c.ClaimOrder
        );
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;

    -- 2. The claim, in one statement: the first @BatchSize candidates nobody took
    -- meanwhile. READPAST skips those another claim is taking, an unchanged token
    -- says a row is as it was read, and UPDLOCK keeps any from being taken twice.
    -- An item whose group was free when read stays free: a finished item comes
    -- back only by hand (Retry_).
    WITH pick AS (
        SELECT TOP (@BatchSize)
            n.EnqueuedAt,
            n.[Status],
            n.[Step],
            n.AttemptNum,
            n.StartedAt,
            n.LockedBy,
            n.LeaseUntil,
            n.[Priority],
            n.ScheduledFor,
            n.UpdatedAt
        FROM @Candidates AS c
        INNER JOIN dbo.Notification AS n WITH (UPDLOCK, ROWLOCK, READPAST, READCOMMITTEDLOCK, FORCESEEK)
            ON c.EnqueuedAt = n.EnqueuedAt AND c.UpdatedAt = n.UpdatedAt
        ORDER BY c.ClaimOrder ASC
    )

    UPDATE pick
    SET
        [Status] = 'Processing',
        AttemptNum = AttemptNum + 1,
        StartedAt = @Now,
        LockedBy = @Holder,
        LeaseUntil = @LeaseUntil,
        UpdatedAt = dbo.QueueNextKey_fn(UpdatedAt)
    OUTPUT
        INSERTED.EnqueuedAt,
        INSERTED.UpdatedAt,
        INSERTED.AttemptNum,
        INSERTED.[Step],
        INSERTED.[Status],
        INSERTED.[Priority],
        INSERTED.ScheduledFor,
        CASE WHEN DELETED.[Status] = 'Processing' THEN ISNULL(DELETED.LockedBy, N'unknown') END
    INTO @Taken (EnqueuedAt, UpdatedAt, AttemptNum, [Step], [Status], [Priority], ScheduledFor, AbandonedBy);
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;

    -- 3. Dead workers' items on their last attempt, and the caller's own: Failed.
    -- Not the ones this call just claimed, which are on their last attempt too.
    UPDATE TOP (100) n
    SET
        [Status] = 'Failed',
        LeaseUntil = NULL,
        Error = N'the lease of the last attempt expired: its worker, '
        + ISNULL(n.LockedBy, N'unknown') + N', vanished',
        UpdatedAt = dbo.QueueNextKey_fn(n.UpdatedAt)
    OUTPUT
        INSERTED.EnqueuedAt,
        INSERTED.UpdatedAt,
        INSERTED.AttemptNum,
        INSERTED.[Step],
        INSERTED.[Status],
        INSERTED.[Priority],
        INSERTED.ScheduledFor,
        ISNULL(DELETED.LockedBy, N'unknown'),
        INSERTED.BatchID
    INTO @Taken (EnqueuedAt, UpdatedAt, AttemptNum, [Step], [Status], [Priority], ScheduledFor, AbandonedBy, BatchID)
    FROM dbo.Notification AS n WITH (UPDLOCK, ROWLOCK, READPAST, READCOMMITTEDLOCK)
    WHERE
        n.[Status] = 'Processing'
        AND (n.LeaseUntil < @Now OR (n.LockedBy = @LockedBy AND (@Type IS NULL OR n.[Type] = @Type)))
        AND n.AttemptNum >= @MaxAttempts
        AND NOT EXISTS (
            SELECT 1 FROM @Taken AS t
            WHERE t.EnqueuedAt = n.EnqueuedAt
        );
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;

    -- Error items met past the limit: Failed, keeping their last error (their last
    -- attempt ended when it was reported), if they still are (checked under the lock),
    -- and not being written by anyone else (READPAST). Kept in @Taken, with no holder,
    -- for their batches' counts alone: neither claimed nor abandoned here.
    UPDATE n
    SET
        [Status] = 'Failed',
        UpdatedAt = dbo.QueueNextKey_fn(n.UpdatedAt)
    OUTPUT
        INSERTED.EnqueuedAt,
        INSERTED.UpdatedAt,
        INSERTED.AttemptNum,
        INSERTED.[Step],
        INSERTED.[Status],
        INSERTED.[Priority],
        INSERTED.ScheduledFor,
        INSERTED.BatchID
    INTO @Taken (EnqueuedAt, UpdatedAt, AttemptNum, [Step], [Status], [Priority], ScheduledFor, BatchID)
    FROM @Exhausted AS x
    INNER JOIN dbo.Notification AS n WITH (UPDLOCK, ROWLOCK, READPAST, READCOMMITTEDLOCK, FORCESEEK)
        ON x.EnqueuedAt = n.EnqueuedAt
    WHERE n.[Status] = 'Error' AND n.AttemptNum >= @MaxAttempts;
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;

    -- The items of a batch that failed here count in their batch, in this transaction
    -- (dbo.Count_QueueBatch_utx: it enqueues the callback of a batch they finish).
    INSERT INTO @BatchCounts (BatchID, [Status], Items)
    SELECT
        t.BatchID,
        t.[Status],
        COUNT(*) AS Items
    FROM @Taken AS t
    WHERE t.[Status] = 'Failed' AND t.BatchID IS NOT NULL
    GROUP BY t.BatchID, t.[Status];
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;
    IF (@RowCnt > 0)
        BEGIN
            EXEC @RetCode = dbo.Count_QueueBatch_utx
                @Counts = @BatchCounts,
                @Caller = @Proc;
            SELECT @ErrNo = @@ERROR;
            IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_ERROR;
        END;

    -- The history: abandoned attempts end, claimed ones begin.
    UPDATE a
    SET
        Outcome = CASE WHEN t.[Status] = 'Failed' THEN 'Failed' ELSE 'Error' END,
        Error = CASE
            WHEN t.[Status] = 'Failed' THEN N'abandoned: the lease expired on the last attempt'
            WHEN t.AbandonedBy = @LockedBy THEN N'abandoned: ' + @Holder + N' restarted and claimed it again'
            ELSE N'abandoned: the lease expired; claimed again by ' + @Holder
        END
    FROM @Taken AS t
    INNER JOIN dbo.NotificationAttempt AS a WITH (FORCESEEK) ON t.EnqueuedAt = a.EnqueuedAt
    WHERE a.Outcome IS NULL AND t.AbandonedBy IS NOT NULL;
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;

    INSERT INTO dbo.NotificationAttempt (EnqueuedAt, StartedAt, AttemptNum, [Step], LockedBy)
    SELECT
        t.EnqueuedAt,
        t.UpdatedAt,
        t.AttemptNum,
        t.[Step],
        @Holder AS LockedBy
    FROM @Taken AS t
    WHERE t.[Status] = 'Processing';
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;

    SELECT TOP (1)
        @EnqueuedAt = t.EnqueuedAt,
        @UpdatedAt = t.UpdatedAt
    FROM @Taken AS t
    WHERE t.[Status] = 'Processing'
    ORDER BY CASE WHEN t.AbandonedBy IS NULL THEN 1 ELSE 0 END, t.[Priority] DESC, t.ScheduledFor ASC, t.EnqueuedAt ASC;
    IF (@EnqueuedAt IS NOT NULL)
        SET @Claimed = (
            SELECT
                t.EnqueuedAt,
                t.UpdatedAt
            FROM @Taken AS t
            WHERE t.[Status] = 'Processing'
            ORDER BY
                CASE WHEN t.AbandonedBy IS NULL THEN 1 ELSE 0 END,
                t.[Priority] DESC,
                t.ScheduledFor ASC,
                t.EnqueuedAt ASC
            FOR JSON PATH
        );
    RETURN 0;

    EXIT_ERROR:
    RETURN 1;
END;
GO
