SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.PhoneNumber: A phone number in E.164 form: + and up to 15 digits.
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo.PhoneNumber') IS NULL
    BEGIN
        CREATE TYPE dbo.PhoneNumber FROM VARCHAR(16) NOT NULL;
    END;
GO
