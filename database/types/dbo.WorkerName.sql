SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.WorkerName: Who holds a claimed item: one worker slot (host and slot number, an app
   server's name). A slot that restarts under the same name gets its unfinished items
   back at once (seed 001), so two slots working at the same time never share a name.
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo.WorkerName') IS NULL
    BEGIN
        CREATE TYPE dbo.WorkerName FROM NVARCHAR(128) NOT NULL;
    END;
GO
