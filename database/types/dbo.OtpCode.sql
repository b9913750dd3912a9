SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.OtpCode: A one-time password sent to a user.
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo.OtpCode') IS NULL
    BEGIN
        CREATE TYPE dbo.OtpCode FROM VARCHAR(10) NOT NULL;
    END;
GO
