SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Send_LifoStack_trx: sends a message to dbo.LifoStack in a transaction of its own;
   the rules are dbo.Send_LifoStack_utx's.
   @Payload: the message.
   Returns 0 with one row, the new message's Id; 1 on error: 735701 inside a transaction,
   and the errors of dbo.Send_LifoStack_utx. */
CREATE OR ALTER PROCEDURE dbo.Send_LifoStack_trx
    @Payload dbo.MessageBody
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    DECLARE @Id BIGINT;
    DECLARE @RetCode INT;
    DECLARE @ErrNo INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Send_LifoStack_trx');
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Send_LifoStack;
    EXEC @RetCode = dbo.Send_LifoStack_utx
        @Payload = @Payload,
        @Id = @Id OUTPUT;
    SELECT @ErrNo = @@ERROR;
    IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_TRANSACTION;
    COMMIT TRANSACTION Send_LifoStack;

    SELECT @Id AS Id;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Send_LifoStack;

    EXIT_ERROR:
    RETURN 1;
END;
GO
