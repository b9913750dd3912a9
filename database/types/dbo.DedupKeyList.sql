SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.DedupKeyList: the DedupKeys an enqueue or a retry is about to make
   unfinished, for dbo.Lock_DedupKeys_utx. Duplicates are allowed: keys equal
   under the column's collation share one lock. */
IF TYPE_ID(N'dbo.DedupKeyList') IS NULL
    BEGIN
        CREATE TYPE dbo.DedupKeyList AS TABLE (
            DedupKey dbo.DedupKey
        );
    END;
GO
