SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.EmailIsValid_fn: does this look like a deliverable e-mail address? One @,
   a local part, a dotted domain, no spaces, line breaks or list separators, no
   empty labels.
   It is a gate against typos and injection, not a proof the mailbox exists.
   @Email: the address; at most 254 characters (an SMTP path's limit). Wider
     than dbo.Email on purpose: SQL Server cuts an over-long argument silently.
   WITH SCHEMABINDING, as it reads no table: unbound, SQL Server assumes that a function reads
   data, and a statement calling it may get a spool it does not need
   (https://learn.microsoft.com/archive/blogs/ianjo/make-functions-schema-bound). A bound
   function may call only bound ones
   (https://learn.microsoft.com/sql/t-sql/statements/create-function-transact-sql); the build's
   check schemabinding keeps this one from calling any.
   dbo.Notification_Email's CHECK Email_HasValid_EmailTo calls it: deploy drops that CHECK
   around an ALTER of this function and re-adds it, in one transaction. */
CREATE OR ALTER FUNCTION dbo.EmailIsValid_fn(@Email NVARCHAR(400))
RETURNS BIT
WITH SCHEMABINDING
AS
BEGIN
    IF
        @Email IS NULL
        OR LEN(@Email) > 254
        OR @Email NOT LIKE N'_%@_%._%'
        OR @Email LIKE N'%@%@%'
        OR @Email LIKE N'%[ ,;:<>()"]%'
        OR @Email LIKE N'%[' + NCHAR(9) + NCHAR(10) + NCHAR(13) + N']%' -- tab, line breaks: header injection
        OR @Email LIKE N'%..%'
        OR @Email LIKE N'.%'
        OR @Email LIKE N'%.'
        OR @Email LIKE N'%.@%'
        OR @Email LIKE N'%@.%'
        RETURN 0;
    RETURN 1;
END;
GO
