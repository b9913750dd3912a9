SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.DeadLetter_V: the dead letters of the message queues (dbo.DeadLetter), for an
   operator to decide which to replay (dbo.Replay_DeadLetter_trx) and which to delete
   (dbo.Delete_DeadLetter_trx), both by DeadLetterId. Newest first is ORDER BY
   DeadLetterId DESC, a seek on the clustered key, as is each further page
   (WHERE DeadLetterId < the last one shown).
   PayloadBytes is the payload's length, so that a list need not read the bytes; Payload
   and Headers are here for an operator who looks at one letter. Columns otherwise as in
   dbo.DeadLetter. */
CREATE OR ALTER VIEW dbo.DeadLetter_V
AS
SELECT
    d.DeadLetterId,
    d.Kind,
    d.Queue,
    d.MessageKey,
    d.MessageId,
    d.CorrelationId,
    d.ReplyToAddress,
    d.Recoverable,
    d.Expires,
    d.DueAt,
    d.EnqueuedAt,
    d.DeliveryCount,
    d.Error,
    d.FirstFailedAt,
    d.DeadLetteredAt,
    DATALENGTH(d.Payload) AS PayloadBytes,
    d.Headers,
    d.Payload
FROM dbo.DeadLetter AS d;
GO
