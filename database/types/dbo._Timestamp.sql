SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.[_Timestamp]: A point in time, always UTC (SYSUTCDATETIME()). The seed's local times are
   replaced by UTC so that schedules survive daylight-saving changes and servers
   in different zones agree.
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo._Timestamp') IS NULL
    BEGIN
        CREATE TYPE dbo.[_Timestamp] FROM DATETIME2(7) NOT NULL;
    END;
GO
