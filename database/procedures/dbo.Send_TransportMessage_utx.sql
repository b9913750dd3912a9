SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Send_TransportMessage_utx: sends a message to a transport queue inside the
   caller's transaction (seed 002); it becomes visible when that commits.
   @Queue: the queue's address (dbo.TransportQueue); required.
   @Id: the message's id (default: a new one).
   @CorrelationId: the conversation it belongs to, or NULL; at most 255 characters.
   @ReplyToAddress: where replies go, or NULL; at most 255 characters. Both are
     wider than their columns on purpose: an over-long value is refused, not cut.
   @Recoverable: 1 (default) if the message must survive; kept for the sender.
   @Expires: when it stops being deliverable, UTC; NULL: never. A time in the
     past is refused: the message could never be received.
   @Headers: a JSON object (default {}).
   @Body: the message's bytes, or NULL.
   @MessageId: OUTPUT, the message's id.
   Returns 0; 1 on error: 735702 outside a transaction, 735703, 735707 an unknown
   queue, expired on arrival, headers that are not a JSON object, or an over-long
   @CorrelationId or @ReplyToAddress. */
CREATE OR ALTER PROCEDURE dbo.Send_TransportMessage_utx
    @Queue VARCHAR(400),
    @Id UNIQUEIDENTIFIER = NULL,
    @CorrelationId VARCHAR(400) = NULL,
    @ReplyToAddress VARCHAR(400) = NULL,
    @Recoverable BIT = 1,
    @Expires dbo.[_Timestamp] = NULL,
    @Headers NVARCHAR(MAX) = N'{}',
    @Body VARBINARY(MAX) = NULL,
    @MessageId UNIQUEIDENTIFIER = NULL OUTPUT
AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Send_TransportMessage_utx';
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    SET @MessageId = NULL;
    IF (@@TRANCOUNT = 0)
        BEGIN
            RAISERROR (735702, 16, 1, N'dbo.Send_TransportMessage_utx');
            GOTO EXIT_ERROR;
        END;
    IF (@Queue IS NULL OR NOT EXISTS (
        SELECT 1 FROM dbo.TransportQueue AS q
        WHERE q.Queue = @Queue
    ))
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Queue names no declared transport queue (dbo.Add_TransportQueue_trx)');
            GOTO EXIT_ERROR;
        END;
    IF (LEN(@CorrelationId) > 255 OR LEN(@ReplyToAddress) > 255)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@CorrelationId and @ReplyToAddress are at most 255 characters');
            GOTO EXIT_ERROR;
        END;
    IF (@Expires IS NOT NULL AND @Expires <= SYSUTCDATETIME())
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Expires has passed: the message could never be received');
            GOTO EXIT_ERROR;
        END;
    -- An object, not an array: its first character after any white space is {.
    IF (
        @Headers IS NULL
        OR ISJSON(@Headers) = 0
        OR LEFT(LTRIM(TRANSLATE(@Headers, NCHAR(9) + NCHAR(10) + NCHAR(13), N'   ')), 1) <> N'{'
    )
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Headers must be a JSON object');
            GOTO EXIT_ERROR;
        END;

    SET @MessageId = ISNULL(@Id, NEWID());
    INSERT INTO dbo.TransportMessage (
        Queue, Id, CorrelationId, ReplyToAddress, Recoverable, Expires, Headers, Body
    )
    VALUES (@Queue, @MessageId, @CorrelationId, @ReplyToAddress, ISNULL(@Recoverable, 1), @Expires, @Headers, @Body);
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;
    IF (@RowCnt <> 1)
        BEGIN
            RAISERROR (735703, 16, 1, @Proc, 1, @RowCnt);
            GOTO EXIT_ERROR;
        END;
    RETURN 0;

    EXIT_ERROR:
    RETURN 1;
END;
GO
