SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Drain_SyncQueue_trx: a worker inside the database for a SyncQueue job type
   whose work is T-SQL (a row of dbo.SyncQueueTypeProcedure), meant for a SQL
   Server Agent job step (seed 001's loop): it claims the next due item of @Type,
   runs the type's JobProcedure on it, reports the outcome, and loops until no
   item of @Type is due or @MaxItems were worked on.
   Each item takes three short transactions: the claim; the job together with its
   Completed report, so the job's writes and the report commit or roll back as one;
   and, when the job failed, the Error report on its own (the job's writes are
   rolled back; the item is retried after the queue's backoff, Failed when its
   attempts are spent). TRY...CATCH, not the house's RAISERROR/GOTO, runs the job:
   it is the only way to go on after an error in someone else's code. An item
   changed by someone else while its job ran (taken over because the job
   outlived the lease: raise 'syncqueue.leaseSeconds'; or cancelled) is left as
   it is, its job's writes rolled back.
   The job procedure's contract: it runs inside the drain's transaction and must
   neither commit nor roll back (a _utx); it is called as
     EXEC @RetCode = <JobProcedure> @EnqueuedAt = <key>, @EntityKey = <entity>,
         @Payload = <JSON or NULL>, @Response = @Response OUTPUT;
   and returns 0 on success (@Response, NVARCHAR(MAX), is recorded); a non-zero
   return code or an error fails the attempt, with the error's text recorded.
   @Type: the job type to work on, a row of dbo.SyncQueueTypeProcedure.
   @LockedBy: the worker name the claims carry (the Agent job's name, say). The
     same name after a restart takes the unfinished item back at once.
   @MaxItems: stop after this many items, 1 to 100000 (default 1000), so that
     one run cannot hold its Agent job for ever.
   Which procedure runs: JobProcedure is dbo.<name> (the CHECK of
   dbo.SyncQueueTypeProcedure, dbo.JobProcedureIsValid_fn). Before each item the drain
   looks it up again with dbo.JobProcedureToRun_fn and runs exactly the [dbo].[<name>]
   that returns, never the stored text: no name resolves in the caller's default
   schema, another schema or another database, and a synonym, a table or a CLR
   procedure of that name is not run. The lookup runs as dbo (the function is WITH
   EXECUTE AS OWNER): the drain's caller has no permission on the job procedure, and
   OBJECT_ID would return NULL to it ("metadata-emitting, built-in functions such as
   OBJECT_ID may return NULL if the user does not have any permission on the object",
   https://learn.microsoft.com/sql/t-sql/functions/object-id-transact-sql). A name the
   lookup refuses (a row from before the CHECK, a procedure dropped since, or the lookup
   failing) is the deployment's fault, not the item's: the drain gives the item back
   unworked as a worker shutting down does (reported Pending: the attempt is returned,
   the item due again at once), records "error 735714: " and that message's text as
   its Error and its attempt's, and ends with 735714.
   The job runs as the drain's caller (a QueueAdmin member, say; see
   docs/operations.md for an Agent job step). Running it needs no grant while dbo owns
   it (in a schema dbo owns): a procedure may call another, and when all objects in
   the chain have the same owner, SQL Server "only checks the EXECUTE permission for
   the caller", see
  https://learn.microsoft.com/dotnet/framework/data/adonet/sql/managing-permissions-with-stored-procedures-in-sql-server
   A job procedure that calls one that does not exist, or that is dropped between the
   lookup and the run (error 2812, caught like the job's own errors), is given back
   the same way, the reason in its Error, and the drain ends with 735707.
   Returns 0 with one row (Claimed, Completed, Failed, TakenOver): how many items
   it claimed, how many completed, how many ended in Error or Failed, and how
   many someone else changed meanwhile; 1 on error: 735701 inside a transaction,
   735707 an unknown @Type, a blank @LockedBy, a bad @MaxItems or a procedure missing
   when the job ran, 735714 a job procedure the drain does not run, and the errors of
   dbo.Next_SyncQueue_utx. An Error report refused for another reason than a change
   by someone else (735705, 735708, 735710) ends the drain with that error. */
CREATE OR ALTER PROCEDURE dbo.Drain_SyncQueue_trx
    @Type VARCHAR(400),
    @LockedBy NVARCHAR(400),
    @MaxItems INT = 1000
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    -- relq's locking hints assume READ COMMITTED, whatever the connection's default.
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Drain_SyncQueue_trx';
    DECLARE @JobProcedure NVARCHAR(300);
    DECLARE @JobToRun NVARCHAR(300);
    DECLARE @Refusal NVARCHAR(2000);
    DECLARE @GiveBackNo INT;
    DECLARE @Why NVARCHAR(2000);
    DECLARE @EnqueuedAt dbo.[_Timestamp];
    DECLARE @UpdatedAt dbo.[_Timestamp];
    DECLARE @EntityKey dbo.EntityKey;
    DECLARE @Payload dbo.JsonDoc;
    DECLARE @Response NVARCHAR(MAX);
    DECLARE @JobError NVARCHAR(MAX);
    DECLARE @CaughtNo INT;
    DECLARE @JobErrNo INT;
    DECLARE @JobRetCode INT;
    DECLARE @Claimed INT = 0;
    DECLARE @Completed INT = 0;
    DECLARE @Failed INT = 0;
    DECLARE @TakenOver INT = 0;
    DECLARE @RetCode INT;
    DECLARE @ErrNo INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Drain_SyncQueue_trx');
            GOTO EXIT_ERROR;
        END;
    SELECT @JobProcedure = p.JobProcedure
    FROM dbo.SyncQueueTypeProcedure AS p
    WHERE p.[Type] = @Type;
    IF (@JobProcedure IS NULL)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Type must be a job type of dbo.SyncQueueTypeProcedure');
            GOTO EXIT_ERROR;
        END;
    IF (@LockedBy IS NULL OR LTRIM(RTRIM(@LockedBy)) = N'')
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@LockedBy must name this worker');
            GOTO EXIT_ERROR;
        END;
    IF (@MaxItems IS NULL OR @MaxItems NOT BETWEEN 1 AND 100000)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@MaxItems must be 1 to 100000');
            GOTO EXIT_ERROR;
        END;

    WHILE (@Claimed < @MaxItems)
        BEGIN
            BEGIN TRANSACTION Drain_SyncQueue;
            EXEC @RetCode = dbo.Next_SyncQueue_utx
                @LockedBy = @LockedBy,
                @Type = @Type,
                @EnqueuedAt = @EnqueuedAt OUTPUT,
                @UpdatedAt = @UpdatedAt OUTPUT;
            SELECT @ErrNo = @@ERROR;
            IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_TRANSACTION;
            COMMIT TRANSACTION Drain_SyncQueue;
            IF (@EnqueuedAt IS NULL) BREAK;
            SET @Claimed = @Claimed + 1;

            SELECT
                @Response = NULL,
                @JobError = NULL,
                @CaughtNo = NULL,
                @JobErrNo = NULL;
            SELECT
                @EntityKey = q.EntityKey,
                @Payload = q.Payload
            FROM dbo.SyncQueue AS q
            WHERE q.EnqueuedAt = @EnqueuedAt;
            -- Looked up for each item, right before it runs: a procedure dropped or a
            -- row changed since the last item is found out before anything runs.
            SELECT
                @JobToRun = NULL,
                @Refusal = NULL;
            BEGIN TRY
                SET @JobToRun = dbo.JobProcedureToRun_fn(@JobProcedure);
            END TRY
            BEGIN CATCH
                SET @Refusal = CONCAT(N'its lookup failed with error ', ERROR_NUMBER(), N': ', ERROR_MESSAGE());
            END CATCH;
            IF (@JobToRun IS NULL)
                BEGIN
                    SET @Refusal = ISNULL(@Refusal, CASE
                        WHEN dbo.JobProcedureIsValid_fn(@JobProcedure) = 0
                            THEN N'it is not dbo.<name> (ASCII letters, digits and _, not beginning sp_ or xp_)'
                        ELSE N'dbo holds no procedure of that name in this database'
                    END);
                    SELECT
                        @Why = N'error 735714: ' + ISNULL(
                            FORMATMESSAGE(735714, @Proc, @JobProcedure, @Type, @Refusal),
                            @Proc + N': job procedure ''' + @JobProcedure + N''' of type ' + @Type
                            + N' was not run, its item given back: ' + @Refusal
                        ),
                        @GiveBackNo = 735714;
                    GOTO GIVE_BACK;
                END;
            BEGIN TRY
                BEGIN TRANSACTION Drain_SyncQueue;
                EXEC @JobRetCode = @JobToRun
                    @EnqueuedAt = @EnqueuedAt,
                    @EntityKey = @EntityKey,
                    @Payload = @Payload,
                    @Response = @Response OUTPUT;
                IF (@JobRetCode = 0)
                    -- Its errors (a takeover: 735710) land in the CATCH like the job's.
                    EXEC dbo.Modify_SyncQueue_utx
                        @EnqueuedAt = @EnqueuedAt,
                        @UpdatedAt = @UpdatedAt,
                        @Status = 'Completed',
                        @Response = @Response;
                ELSE
                    SET @JobError = @JobToRun + N' returned ' + CAST(@JobRetCode AS NVARCHAR(12));
                IF (@JobError IS NULL)
                    COMMIT TRANSACTION Drain_SyncQueue;
                ELSE
                    ROLLBACK TRANSACTION Drain_SyncQueue;
            END TRY
            BEGIN CATCH
                -- Only the report's own refusal means the item changed hands; the
                -- same number raised by the job is the job's failure. A relq error that
                -- arrives as 18054 (its message not registered on this server) is relq's.
                SELECT
                    @JobErrNo = dbo.RelqErrorNumber_fn(ERROR_NUMBER(), ERROR_MESSAGE()),
                    @CaughtNo = CASE
                        WHEN ERROR_PROCEDURE() LIKE N'%Modify[_]SyncQueue[_]utx'
                            THEN dbo.RelqErrorNumber_fn(ERROR_NUMBER(), ERROR_MESSAGE())
                    END,
                    @JobError = N'error ' + CAST(ERROR_NUMBER() AS NVARCHAR(12))
                    + ISNULL(N' in ' + ERROR_PROCEDURE(), N'')
                    + N' at line ' + CAST(ERROR_LINE() AS NVARCHAR(12)) + N': ' + ERROR_MESSAGE();
                IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Drain_SyncQueue;
            END CATCH;

            IF (@JobErrNo = 2812)
                BEGIN
                    SELECT
                        @Why = N'the job procedure ' + @JobToRun + N' of dbo.SyncQueueTypeProcedure, '
                        + N'or one it calls, does not exist (' + @JobError + N'); its item was given back',
                        @GiveBackNo = 735707;
                    GOTO GIVE_BACK;
                END;
            IF (@CaughtNo IN (735705, 735708, 735710))
                SET @TakenOver = @TakenOver + 1;  -- the item is someone else's now
            ELSE IF (@JobError IS NULL)
                SET @Completed = @Completed + 1;
            ELSE
                BEGIN
                    BEGIN TRY
                        BEGIN TRANSACTION Drain_SyncQueue;
                        EXEC dbo.Modify_SyncQueue_utx
                            @EnqueuedAt = @EnqueuedAt,
                            @UpdatedAt = @UpdatedAt,
                            @Status = 'Error',
                            @Error = @JobError;
                        COMMIT TRANSACTION Drain_SyncQueue;
                        SET @Failed = @Failed + 1;
                    END TRY
                    BEGIN CATCH
                        IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Drain_SyncQueue;
                        IF (dbo.RelqErrorNumber_fn(ERROR_NUMBER(), ERROR_MESSAGE()) NOT IN (735705, 735708, 735710))
                            THROW;
                        SET @TakenOver = @TakenOver + 1;
                    END CATCH;
                END;
        END;

    SELECT
        @Claimed AS Claimed,
        @Completed AS Completed,
        @Failed AS Failed,
        @TakenOver AS TakenOver;
    RETURN 0;

    -- The item's job did not run, or met a missing procedure: give the claim back.
    -- Should even that report be refused (the item changed hands meanwhile, or
    -- 735709), the rollback below undoes it, and the item comes back when its lease
    -- runs out.
    GIVE_BACK:
    BEGIN TRANSACTION Drain_SyncQueue;
    EXEC @RetCode = dbo.Modify_SyncQueue_utx
        @EnqueuedAt = @EnqueuedAt,
        @UpdatedAt = @UpdatedAt,
        @Status = 'Pending',
        @Error = @Why;
    SELECT @ErrNo = @@ERROR;
    IF (@ErrNo = 0 AND @RetCode = 0) COMMIT TRANSACTION Drain_SyncQueue;
    IF (@GiveBackNo = 735714)
        BEGIN
            RAISERROR (735714, 16, 1, @Proc, @JobProcedure, @Type, @Refusal);
            GOTO EXIT_TRANSACTION;
        END;
    RAISERROR (735707, 16, 1, @Proc, @Why);
    GOTO EXIT_TRANSACTION;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Drain_SyncQueue;

    EXIT_ERROR:
    RETURN 1;
END;
GO
