SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Email: An e-mail address; 254 characters is the longest an SMTP path allows.
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo.Email') IS NULL
    BEGIN
        CREATE TYPE dbo.Email FROM NVARCHAR(254) NOT NULL;
    END;
GO
