SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Add_TransportQueue_trx: declares a transport queue in a transaction of
   its own; the rules are dbo.Add_TransportQueue_utx's.
   @Endpoint: the endpoint's name.
   @Machine: the instance's machine name; NULL for the primary queue.
   Returns 0 with one row, the queue's address (Queue); 1 on error: 735701
   inside a transaction, and the errors of dbo.Add_TransportQueue_utx. */
CREATE OR ALTER PROCEDURE dbo.Add_TransportQueue_trx
    @Endpoint VARCHAR(400),
    @Machine VARCHAR(400) = NULL
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    DECLARE @Queue VARCHAR(255);
    DECLARE @RetCode INT;
    DECLARE @ErrNo INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Add_TransportQueue_trx');
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Add_TransportQueue;
    EXEC @RetCode = dbo.Add_TransportQueue_utx
        @Endpoint = @Endpoint,
        @Machine = @Machine,
        @Queue = @Queue OUTPUT;
    SELECT @ErrNo = @@ERROR;
    IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_TRANSACTION;
    COMMIT TRANSACTION Add_TransportQueue;

    SELECT @Queue AS Queue;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Add_TransportQueue;

    EXIT_ERROR:
    RETURN 1;
END;
GO
