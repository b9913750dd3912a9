SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.ItemKeyList: the DedupKeys or GroupKeys an enqueue or a retry is about to
   make unfinished, for dbo.Lock_ItemKeys_utx. Duplicates are allowed: keys equal
   under the database's collation share one lock. */
IF TYPE_ID(N'dbo.ItemKeyList') IS NULL
    BEGIN
        CREATE TYPE dbo.ItemKeyList AS TABLE (
            ItemKey NVARCHAR(200) NOT NULL
        );
    END;
GO
