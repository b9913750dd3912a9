SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueIsProcessable_fn: can an item in this state be picked up for processing?
   Seed 000's classification, exactly: Paused counts, because a paused item
   will be processed once resumed; the claim itself (Next_) takes only Pending
   and Error items, and a paused one must first go back to Pending.
   @Status: the state.
   WITH SCHEMABINDING, as it reads no table: unbound, SQL Server assumes that a function reads
   data, and a statement calling it may get a spool it does not need
   (https://learn.microsoft.com/archive/blogs/ianjo/make-functions-schema-bound). A bound
   function may call only bound ones
   (https://learn.microsoft.com/sql/t-sql/statements/create-function-transact-sql); the build's
   check schemabinding keeps this one from calling any.
   Its parameter's type dbo.QueueState cannot be dropped while this function uses it, bound or
   not: a migration that replaces the type alters or drops this function first
   (https://learn.microsoft.com/sql/t-sql/statements/drop-type-transact-sql). */
CREATE OR ALTER FUNCTION dbo.QueueIsProcessable_fn(@Status dbo.QueueState)
RETURNS BIT
WITH SCHEMABINDING
AS
BEGIN
    IF @Status IN ('Pending', 'Paused', 'Error')
        RETURN 1;
    RETURN 0;
END;
GO
