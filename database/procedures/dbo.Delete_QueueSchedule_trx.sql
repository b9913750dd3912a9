SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Delete_QueueSchedule_trx: removes a recurring schedule for good. Jobs it enqueued
   before are not touched; a scheduler that read it as due finds it gone when it fires
   (735720) and goes on with the other schedules.
   @Name: the schedule.
   Returns 0; 1 on error: 735701 inside a transaction, 735707 a NULL @Name, 735720 no such
   schedule (another operator removed it first). */
CREATE OR ALTER PROCEDURE dbo.Delete_QueueSchedule_trx
    @Name dbo.[Name]
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Delete_QueueSchedule_trx';
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Delete_QueueSchedule_trx');
            GOTO EXIT_ERROR;
        END;
    IF (@Name IS NULL)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Name is required');
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Delete_QueueSchedule;
    DELETE FROM dbo.QueueSchedule
    WHERE [Name] = @Name;
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
    IF (@RowCnt = 0)
        BEGIN
            RAISERROR (735720, 16, 1, @Proc, @Name);
            GOTO EXIT_TRANSACTION;
        END;
    IF (@RowCnt <> 1)
        BEGIN
            RAISERROR (735703, 16, 1, @Proc, 1, @RowCnt);
            GOTO EXIT_TRANSACTION;
        END;
    COMMIT TRANSACTION Delete_QueueSchedule;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Delete_QueueSchedule;

    EXIT_ERROR:
    RETURN 1;
END;
GO
