SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.MessageFailure: how often consumers failed on a message that is still queued, one
   row per message that failed at least once, keyed by its kind and its key in its table
   (Id; for the transport, RowVersion, an identity of the whole table). The message
   tables themselves are not widened: a message that never fails has no row here, and the
   hot tables need no migration.
   Why a table of its own: a consumer of a _utx receive fails by rolling back, and the
   rollback undoes every write of its transaction back to the outermost BEGIN TRANSACTION
   (https://learn.microsoft.com/sql/t-sql/language-elements/rollback-work-transact-sql);
   SQL Server has no autonomous transactions, so a count the receive itself wrote would
   be undone with the failure it should record. dbo.Fail_<Kind>_trx writes this row after
   the rollback, in a transaction of its own, and moves the message to dbo.DeadLetter when
   Failures reaches '<kind>.maxDeliveries' (dbo.AppSettingInt_fn). A receive deletes the
   rows of the messages it takes in its own transaction (committed with the consumer's
   work, undone with its rollback) and returns Failures + 1 as DeliveryCount.
   Every writer locks the message's row before this one (a receive deletes the message,
   then its row here; dbo.Fail_<Kind>_trx reads the message WITH (UPDLOCK) first), so
   writers of one message never wait on each other in opposite orders.
   Failures: the failed deliveries recorded, at least 1. Error: the last one's reason.
   FirstFailedAt, LastFailedAt: when the first and the last were recorded (UTC). */
IF OBJECT_ID(N'dbo.MessageFailure', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.MessageFailure (
            Kind dbo.MessageKind,
            MessageKey BIGINT NOT NULL,
            Failures INT NOT NULL,
            Error dbo.WebResponse,
            FirstFailedAt dbo.[_Timestamp],
            LastFailedAt dbo.[_Timestamp],
            CONSTRAINT PK_MessageFailure PRIMARY KEY CLUSTERED (Kind, MessageKey),
            CONSTRAINT MessageFailure_IsOf_MessageKind CHECK (
                Kind IN ('FifoQueue', 'StrictFifoQueue', 'LifoStack', 'PendingQueue', 'TransportMessage')
            ),
            CONSTRAINT MessageFailure_Counts_AFailure CHECK (Failures >= 1)
        );
    END;
GO
