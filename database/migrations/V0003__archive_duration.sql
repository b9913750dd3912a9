SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* V0003__archive_duration: an archive row keeps an item as its worker view showed
   it at the purge, and the pipeline's Parquet archive has always carried Duration;
   the archive tables lacked it, so analytics over archived items lost how long
   each last attempt took. Each archive gets Duration (NULL: rows archived before
   have none), last, as the table files now create it. Guarded: where a table
   has the column (a new database) it changes nothing. */
IF COL_LENGTH(N'dbo.NotificationArchive', N'Duration') IS NULL
    BEGIN
        ALTER TABLE dbo.NotificationArchive ADD Duration dbo.Duration NULL;
    END;
GO
IF COL_LENGTH(N'dbo.SyncQueueArchive', N'Duration') IS NULL
    BEGIN
        ALTER TABLE dbo.SyncQueueArchive ADD Duration dbo.Duration NULL;
    END;
GO
