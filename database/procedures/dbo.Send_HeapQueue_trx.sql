SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Send_HeapQueue_trx: sends a message to dbo.HeapQueue in a transaction of its own;
   the rules are dbo.Send_HeapQueue_utx's.
   @Payload: the message.
   Returns 0; 1 on error: 735701 inside a transaction, and the errors of
   dbo.Send_HeapQueue_utx. */
CREATE OR ALTER PROCEDURE dbo.Send_HeapQueue_trx
    @Payload dbo.MessageBody
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    DECLARE @RetCode INT;
    DECLARE @ErrNo INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Send_HeapQueue_trx');
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Send_HeapQueue;
    EXEC @RetCode = dbo.Send_HeapQueue_utx
        @Payload = @Payload;
    SELECT @ErrNo = @@ERROR;
    IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_TRANSACTION;
    COMMIT TRANSACTION Send_HeapQueue;

    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Send_HeapQueue;

    EXIT_ERROR:
    RETURN 1;
END;
GO
