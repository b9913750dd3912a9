SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.PhoneIsValid_fn: is this a phone number in E.164 form: +, a non-zero digit,
   then 7 to 14 more digits?
   @PhoneNumber: the number. Wider than dbo.PhoneNumber on purpose: SQL Server
     cuts an over-long argument silently, which would make a bad number valid. */
CREATE OR ALTER FUNCTION dbo.PhoneIsValid_fn(@PhoneNumber VARCHAR(400))
RETURNS BIT
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
