SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* V0004__job_procedure_dbo: dbo.SyncQueueTypeProcedure gets the CHECK
   SyncQueueTypeProcedure_IsRunBy_DboProcedure that its table file now creates:
   JobProcedure names a procedure of this database's dbo schema, exactly dbo.<name>
   (dbo.JobProcedureIsValid_fn). Before it, any name was taken, and the drain ran it
   as whoever ran the drain.
   WITH CHECK: the rows already there must pass too, and the constraint is trusted.
   A row that breaks it fails the ALTER with error 547 naming the constraint, the
   deploy stops and nothing of the step is applied; the deploying team makes each
   row dbo.<name> of a procedure in dbo (or deletes it) and deploys again. The rows
   are not rewritten here: a one-part name ran in its caller's default schema, not
   necessarily dbo, and another schema or database names another procedure; only
   the team knows which procedure each type is meant to run.
   Not WITH NOCHECK: the constraint would be untrusted and the bad rows would stay
   for the drain to run into ("WITH CHECK | WITH NOCHECK",
   https://learn.microsoft.com/sql/t-sql/statements/alter-table-transact-sql), and
   deploy re-adds the CHECKs calling a function WITH CHECK whenever it alters the
   function, so they would fail then instead.
   `invoke deploy` and dist/deploy.sql already add the constraint where they first
   create dbo.JobProcedureIsValid_fn (they re-add every CHECK calling a function
   they deploy, where its table exists), and a bad row fails that step the same
   way; this file adds it wherever it is still missing. Guarded: where the
   constraint exists (a new database too) it changes nothing. */
IF OBJECT_ID(N'dbo.SyncQueueTypeProcedure_IsRunBy_DboProcedure', N'C') IS NULL
    BEGIN
        ALTER TABLE dbo.SyncQueueTypeProcedure WITH CHECK ADD CONSTRAINT SyncQueueTypeProcedure_IsRunBy_DboProcedure
        CHECK (dbo.JobProcedureIsValid_fn(JobProcedure) = 1);
    END;
GO
