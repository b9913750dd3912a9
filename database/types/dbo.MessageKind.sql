SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.MessageKind: The kind of message queue a message belongs to, named as its table:
   FifoQueue, StrictFifoQueue, LifoStack, PendingQueue or TransportMessage (the kinds
   whose messages have a key a consumer can name after a rollback; dbo.HeapQueue has
   none). The columns of this type carry a CHECK that lists them.
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo.MessageKind') IS NULL
    BEGIN
        CREATE TYPE dbo.MessageKind FROM VARCHAR(30) NOT NULL;
    END;
GO
