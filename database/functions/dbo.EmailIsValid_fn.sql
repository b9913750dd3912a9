SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.EmailIsValid_fn: does this look like a deliverable e-mail address? One @,
   a local part, a dotted domain, no spaces or list separators, no empty labels.
   It is a gate against typos and injection, not a proof the mailbox exists.
   @Email: the address. */
CREATE OR ALTER FUNCTION dbo.EmailIsValid_fn(@Email dbo.Email)
RETURNS BIT
AS
BEGIN
    IF
        @Email IS NULL
        OR @Email NOT LIKE N'_%@_%._%'
        OR @Email LIKE N'%@%@%'
        OR @Email LIKE N'%[ ,;:<>()"]%'
        OR @Email LIKE N'%..%'
        OR @Email LIKE N'.%'
        OR @Email LIKE N'%.'
        OR @Email LIKE N'%.@%'
        OR @Email LIKE N'%@.%'
        RETURN 0;
    RETURN 1;
END;
GO
