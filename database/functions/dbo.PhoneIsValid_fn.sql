SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.PhoneIsValid_fn: is this a phone number in E.164 form: +, a non-zero digit,
   then 7 to 14 more digits?
   @PhoneNumber: the number. Wider than dbo.PhoneNumber on purpose: SQL Server
     cuts an over-long argument silently, which would make a bad number valid.
   WITH SCHEMABINDING, as it reads no table: unbound, SQL Server assumes that a function reads
   data, and a statement calling it may get a spool it does not need
   (https://learn.microsoft.com/archive/blogs/ianjo/make-functions-schema-bound). A bound
   function may call only bound ones
   (https://learn.microsoft.com/sql/t-sql/statements/create-function-transact-sql); the build's
   check schemabinding keeps this one from calling any.
   dbo.Notification_Sms's CHECK Sms_HasValid_PhoneNumber calls it: deploy drops that CHECK
   around an ALTER of this function and re-adds it, in one transaction. */
CREATE OR ALTER FUNCTION dbo.PhoneIsValid_fn(@PhoneNumber VARCHAR(400))
RETURNS BIT
WITH SCHEMABINDING
AS
BEGIN
    IF
        @PhoneNumber IS NULL
        OR @PhoneNumber NOT LIKE '+[1-9]%'
        OR LEN(@PhoneNumber) NOT BETWEEN 9 AND 16
        OR SUBSTRING(@PhoneNumber, 2, 15) LIKE '%[^0-9]%'
        OR DATALENGTH(@PhoneNumber) <> DATALENGTH(RTRIM(@PhoneNumber)) -- LEN and LIKE ignore trailing spaces
        RETURN 0;
    RETURN 1;
END;
GO
