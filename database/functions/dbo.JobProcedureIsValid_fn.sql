SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.JobProcedureIsValid_fn: is this the name of a job procedure as the job queues'
   <Queue>TypeProcedure tables take it: exactly dbo.<name>, <name> an ASCII letter or _
   followed by up to 127 ASCII letters, digits or _, not beginning sp_ or xp_?
   It reads the text only; dbo.JobProcedureToRun_fn finds the procedure it names.
   One spelling, refused otherwise rather than normalised: a CHECK cannot rewrite a value,
   and one spelling is one row per procedure. So it refuses a name of one part (resolved in
   its caller's default schema first), of three or four parts (another database or
   server), of another schema (DBO included: a case-sensitive database has no schema
   DBO), brackets or quotes ([dbo].[X]: a bracketed name may hold any character),
   whitespace, semicolons and comment marks, and letters outside ASCII (homoglyphs such as
   a Cyrillic a). sp_ and xp_ names are refused as SQL Server looks them up among the
   system procedures first, in any case under a case-insensitive collation: "If a
   user-defined procedure has the same name as a system procedure, the user-defined
   procedure might not ever execute"
   (https://learn.microsoft.com/sql/relational-databases/stored-procedures/execute-a-stored-procedure).
   The patterns are matched under a binary collation: in a LIKE range, which characters a
   range holds depends on the collation
   (https://learn.microsoft.com/sql/t-sql/language-elements/like-transact-sql); and
   trailing spaces are refused by length, whatever LIKE does with them.
   @JobProcedure: the name. Wider than <Queue>TypeProcedure.JobProcedure (300) on purpose:
     SQL Server cuts an over-long argument silently, which would make a bad name valid.
   WITH SCHEMABINDING, as it reads no table: unbound, SQL Server assumes that a function reads
   data, and a statement calling it may get a spool it does not need
   (https://learn.microsoft.com/archive/blogs/ianjo/make-functions-schema-bound). A bound
   function may call only bound ones
   (https://learn.microsoft.com/sql/t-sql/statements/create-function-transact-sql); the build's
   check schemabinding keeps this one from calling any.
   Each job queue's CHECK <Queue>TypeProcedure_IsRunBy_DboProcedure calls it (SyncQueue's
   among them): deploy drops those CHECKs around an ALTER of this function and re-adds them
   WITH CHECK, in one transaction, so every row must pass the new version. */
CREATE OR ALTER FUNCTION dbo.JobProcedureIsValid_fn(@JobProcedure NVARCHAR(400))
RETURNS BIT
WITH SCHEMABINDING
AS
BEGIN
    DECLARE @Name NVARCHAR(400) = SUBSTRING(@JobProcedure, 5, 400);
    IF
        @JobProcedure IS NULL
        OR @JobProcedure COLLATE Latin1_General_BIN2 NOT LIKE N'dbo.[A-Za-z_]%'
        OR @Name COLLATE Latin1_General_BIN2 LIKE N'%[^A-Za-z0-9_]%'
        OR @Name COLLATE Latin1_General_BIN2 LIKE N'[SsXx][Pp][_]%'
        OR DATALENGTH(@Name) > 256 -- 128 characters, SQL Server's limit for a name
        OR DATALENGTH(@JobProcedure) <> DATALENGTH(RTRIM(@JobProcedure))
        RETURN 0;
    RETURN 1;
END;
GO
