SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.JobProcedureToRun_fn: the procedure a job queue's drain runs for a job procedure's
   name: [dbo].[<name>] as this database's catalog spells it, when the name passes
   dbo.JobProcedureIsValid_fn and dbo.<name> is a T-SQL stored procedure (type P) of this
   database; else NULL. The drain runs exactly what this returns, never the stored text: a
   synonym, a CLR or extended procedure, a table or a function of that name is not run.
   @JobProcedure: the name, as <Queue>TypeProcedure.JobProcedure holds it; wider than that
     column (300), as SQL Server cuts an over-long argument silently.
   WITH EXECUTE AS OWNER, so that the lookup sees what dbo sees. A drain's caller (a
   QueueAdmin member) has no permission on the job procedures, and "metadata-emitting,
   built-in functions such as OBJECT_ID may return NULL if the user does not have any
   permission on the object" (https://learn.microsoft.com/sql/t-sql/functions/object-id-transact-sql);
   a module may instead "execute under the credentials of the owner"
   (https://learn.microsoft.com/sql/relational-databases/security/metadata-visibility-configuration,
   https://learn.microsoft.com/sql/t-sql/statements/execute-as-clause-transact-sql). Only the
   lookup runs as the owner: the drain runs the job in its caller's name. Nobody is granted
   EXECUTE on it; the drain reaches it through the ownership chain.
   Impersonating the owner needs a database owner that resolves to a login on this server:
   where it does not (a database restored from another server), calling it fails with
   error 15517, which the drain reports as the refusal of the item's job procedure.
   Not schema bound: it calls dbo.JobProcedureIsValid_fn and reads metadata. */
CREATE OR ALTER FUNCTION dbo.JobProcedureToRun_fn(@JobProcedure NVARCHAR(400))
RETURNS NVARCHAR(300)
WITH EXECUTE AS OWNER
AS
BEGIN
    DECLARE @Id INT;
    IF (dbo.JobProcedureIsValid_fn(@JobProcedure) = 0) RETURN NULL;
    SET @Id = OBJECT_ID(N'dbo.' + QUOTENAME(SUBSTRING(@JobProcedure, 5, 128)), N'P');
    IF (@Id IS NULL OR OBJECT_SCHEMA_NAME(@Id) <> N'dbo') RETURN NULL;
    RETURN QUOTENAME(OBJECT_SCHEMA_NAME(@Id)) + N'.' + QUOTENAME(OBJECT_NAME(@Id));
END;
GO
