SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.ItemKeyList: the DedupKeys and GroupKeys an enqueue or a retry is about to
   make unfinished, for dbo.Lock_ItemKeys_utx: KeyColumn (DedupKey or GroupKey)
   and the key. Duplicates are allowed: keys of a column equal under the
   database's collation share one lock. */
IF TYPE_ID(N'dbo.ItemKeyList') IS NULL
    BEGIN
        CREATE TYPE dbo.ItemKeyList AS TABLE (
            KeyColumn VARCHAR(20) NOT NULL,
            ItemKey NVARCHAR(200) NOT NULL
        );
    END;
GO
