SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Replay_DeadLetter_trx: sends a dead letter back to its queue and removes it from
   dbo.DeadLetter, in one transaction. The send is the kind's own Send_<Kind>_utx, so the
   message is checked as any send is, and it arrives as a new message: a new Id (or
   RowVersion), no failures counted, a pending message due at once, a transport message
   with its own Id, correlation, reply-to, expiry and headers.
   The letter is deleted first, and the delete's lock is held to the end of the
   transaction: a second replay (or a delete) of the same letter by another operator waits
   for this one and then finds it gone (735716), so a letter goes back at most once. If the
   send is refused (its transport queue dropped since, its transport message expired
   meanwhile: 735707), all of it is rolled back and the letter stays.
   @DeadLetterId: the letter's key, as dbo.DeadLetter_V shows it; required. Keys are an
     identity and never reused, so the key is also the token of the letter the operator saw.
   Returns 0 with one row: Kind, Queue (the transport queue, else NULL), MessageKey (the new
   message's Id; NULL for the transport, whose RowVersion its send does not return) and
   MessageId (the transport message's Id, else NULL); 1 on error: 735701 inside a
   transaction, 735707 a NULL @DeadLetterId and the errors of the kind's Send_<Kind>_utx,
   735716 the letter is gone (replayed or deleted by someone else). */
CREATE OR ALTER PROCEDURE dbo.Replay_DeadLetter_trx
    @DeadLetterId BIGINT
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Replay_DeadLetter_trx';
    DECLARE @Key NVARCHAR(40) = CONVERT(NVARCHAR(40), @DeadLetterId);
    DECLARE @Letter TABLE (
        Kind VARCHAR(30) NOT NULL,
        Queue VARCHAR(255) NULL,
        MessageId UNIQUEIDENTIFIER NULL,
        CorrelationId VARCHAR(255) NULL,
        ReplyToAddress VARCHAR(255) NULL,
        Recoverable BIT NULL,
        Expires DATETIME2(7) NULL,
        Headers NVARCHAR(MAX) NULL,
        Payload VARBINARY(MAX) NULL
    );
    DECLARE @Kind VARCHAR(30);
    DECLARE @Queue VARCHAR(255);
    DECLARE @MessageId UNIQUEIDENTIFIER;
    DECLARE @CorrelationId VARCHAR(255);
    DECLARE @ReplyToAddress VARCHAR(255);
    DECLARE @Recoverable BIT;
    DECLARE @Expires DATETIME2(7);
    DECLARE @Headers NVARCHAR(MAX);
    DECLARE @Payload VARBINARY(MAX);
    DECLARE @NewKey BIGINT;
    DECLARE @NewMessageId UNIQUEIDENTIFIER;
    DECLARE @RetCode INT = 0;
    DECLARE @ErrNo INT = 0;
    DECLARE @RowCnt INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Replay_DeadLetter_trx');
            GOTO EXIT_ERROR;
        END;
    IF (@DeadLetterId IS NULL)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@DeadLetterId is required: the key dbo.DeadLetter_V shows');
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Replay_DeadLetter;
    DELETE FROM dbo.DeadLetter
    OUTPUT
        DELETED.Kind,
        DELETED.Queue,
        DELETED.MessageId,
        DELETED.CorrelationId,
        DELETED.ReplyToAddress,
        DELETED.Recoverable,
        DELETED.Expires,
        DELETED.Headers,
        DELETED.Payload
    INTO @Letter (Kind, Queue, MessageId, CorrelationId, ReplyToAddress, Recoverable, Expires, Headers, Payload)
    WHERE DeadLetterId = @DeadLetterId;
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
    IF (@RowCnt = 0)
        BEGIN
            RAISERROR (735716, 16, 1, @Proc, @Key);
            GOTO EXIT_TRANSACTION;
        END;
    SELECT
        @Kind = l.Kind,
        @Queue = l.Queue,
        @MessageId = l.MessageId,
        @CorrelationId = l.CorrelationId,
        @ReplyToAddress = l.ReplyToAddress,
        @Recoverable = l.Recoverable,
        @Expires = l.Expires,
        @Headers = l.Headers,
        @Payload = l.Payload
    FROM @Letter AS l;

    -- @@ERROR is read in each branch: the IF that follows an EXEC would reset it.
    IF (@Kind = 'FifoQueue')
        BEGIN
            EXEC @RetCode = dbo.Send_FifoQueue_utx
                @Payload = @Payload,
                @Id = @NewKey OUTPUT;
            SELECT @ErrNo = @@ERROR;
        END;
    ELSE IF (@Kind = 'StrictFifoQueue')
        BEGIN
            EXEC @RetCode = dbo.Send_StrictFifoQueue_utx
                @Payload = @Payload,
                @Id = @NewKey OUTPUT;
            SELECT @ErrNo = @@ERROR;
        END;
    ELSE IF (@Kind = 'LifoStack')
        BEGIN
            EXEC @RetCode = dbo.Send_LifoStack_utx
                @Payload = @Payload,
                @Id = @NewKey OUTPUT;
            SELECT @ErrNo = @@ERROR;
        END;
    ELSE IF (@Kind = 'PendingQueue')
        BEGIN
            EXEC @RetCode = dbo.Send_PendingQueue_utx
                @Payload = @Payload,
                @Id = @NewKey OUTPUT;
            SELECT @ErrNo = @@ERROR;
        END;
    ELSE IF (@Kind = 'TransportMessage')
        BEGIN
            EXEC @RetCode = dbo.Send_TransportMessage_utx
                @Queue = @Queue,
                @Id = @MessageId,
                @CorrelationId = @CorrelationId,
                @ReplyToAddress = @ReplyToAddress,
                @Recoverable = @Recoverable,
                @Expires = @Expires,
                @Headers = @Headers,
                @Body = @Payload,
                @MessageId = @NewMessageId OUTPUT;
            SELECT @ErrNo = @@ERROR;
        END;
    ELSE
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'the dead letter''s Kind names no message queue relq can send to');
            GOTO EXIT_TRANSACTION;
        END;
    IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_TRANSACTION;
    COMMIT TRANSACTION Replay_DeadLetter;

    SELECT
        @Kind AS Kind,
        @Queue AS Queue,
        @NewKey AS MessageKey,
        @NewMessageId AS MessageId;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Replay_DeadLetter;

    EXIT_ERROR:
    RETURN 1;
END;
GO
