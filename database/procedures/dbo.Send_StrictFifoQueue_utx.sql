SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Send_StrictFifoQueue_utx: sends a message to dbo.StrictFifoQueue (a strict FIFO
   queue) inside the caller's transaction: it becomes visible to receivers when that
   commits.
   @Payload: the message; required.
   @Id: OUTPUT, the new message's Id.
   Returns 0; 1 on error: 735702 outside a transaction, 735703, 735707 a NULL payload. */
CREATE OR ALTER PROCEDURE dbo.Send_StrictFifoQueue_utx
    @Payload dbo.MessageBody,
    @Id BIGINT = NULL OUTPUT
AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Send_StrictFifoQueue_utx';
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;
    SET @Id = NULL;
    IF (@@TRANCOUNT = 0)
        BEGIN
            RAISERROR (735702, 16, 1, N'dbo.Send_StrictFifoQueue_utx');
            GOTO EXIT_ERROR;
        END;
    IF (@Payload IS NULL)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Payload is required: a message has a body');
            GOTO EXIT_ERROR;
        END;

    INSERT INTO dbo.StrictFifoQueue (Payload) VALUES (@Payload);
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;
    IF (@RowCnt <> 1)
        BEGIN
            RAISERROR (735703, 16, 1, @Proc, 1, @RowCnt);
            GOTO EXIT_ERROR;
        END;
    SET @Id = SCOPE_IDENTITY();
    RETURN 0;

    EXIT_ERROR:
    RETURN 1;
END;
GO
