SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.[_Type]: The name of a job type: the discriminator of a queue's subtypes.
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo._Type') IS NULL
    BEGIN
        CREATE TYPE dbo.[_Type] FROM VARCHAR(50) NOT NULL;
    END;
GO
