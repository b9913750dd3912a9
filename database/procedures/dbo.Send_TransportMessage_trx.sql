SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Send_TransportMessage_trx: sends a message to a transport queue in a
   transaction of its own; the rules are dbo.Send_TransportMessage_utx's.
   @Queue: the queue's address.
   @Id: the message's id (default: a new one).
   @CorrelationId: the conversation it belongs to, or NULL; at most 255 characters.
   @ReplyToAddress: where replies go, or NULL; at most 255 characters. Both are
     wider than their columns on purpose: an over-long value is refused, not cut.
   @Recoverable: 1 (default) if the message must survive.
   @Expires: when it stops being deliverable, UTC; NULL: never.
   @Headers: a JSON object (default {}).
   @Body: the message's bytes, or NULL.
   Returns 0 with one row, the message's Id; 1 on error: 735701 inside a
   transaction, and the errors of dbo.Send_TransportMessage_utx. */
CREATE OR ALTER PROCEDURE dbo.Send_TransportMessage_trx
    @Queue VARCHAR(400),
    @Id UNIQUEIDENTIFIER = NULL,
    @CorrelationId VARCHAR(400) = NULL,
    @ReplyToAddress VARCHAR(400) = NULL,
    @Recoverable BIT = 1,
    @Expires dbo.[_Timestamp] = NULL,
    @Headers NVARCHAR(MAX) = N'{}',
    @Body VARBINARY(MAX) = NULL
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    DECLARE @MessageId UNIQUEIDENTIFIER;
    DECLARE @RetCode INT;
    DECLARE @ErrNo INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Send_TransportMessage_trx');
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Send_TransportMessage;
    EXEC @RetCode = dbo.Send_TransportMessage_utx
        @Queue = @Queue,
        @Id = @Id,
        @CorrelationId = @CorrelationId,
        @ReplyToAddress = @ReplyToAddress,
        @Recoverable = @Recoverable,
        @Expires = @Expires,
        @Headers = @Headers,
        @Body = @Body,
        @MessageId = @MessageId OUTPUT;
    SELECT @ErrNo = @@ERROR;
    IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_TRANSACTION;
    COMMIT TRANSACTION Send_TransportMessage;

    SELECT @MessageId AS Id;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Send_TransportMessage;

    EXIT_ERROR:
    RETURN 1;
END;
GO
