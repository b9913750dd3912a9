SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueBatchCountList: what a statement did to batched items, for
   dbo.Count_QueueBatch_utx: per batch and state, how many of its items entered that
   final state (Items > 0) or left it (Items < 0: a Retry takes a Failed item back).
   Several rows of one batch and state add up. */
IF TYPE_ID(N'dbo.QueueBatchCountList') IS NULL
    BEGIN
        CREATE TYPE dbo.QueueBatchCountList AS TABLE (
            BatchID INT NOT NULL,
            [Status] VARCHAR(20) NOT NULL,
            Items INT NOT NULL
        );
    END;
GO
