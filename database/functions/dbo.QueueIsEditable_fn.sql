SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueIsEditable_fn: may a worker still write to an item in this state?
   @Status: the state. Seed 000's classification, exactly.
   WITH SCHEMABINDING, as it reads no table: unbound, SQL Server assumes that a function reads
   data, and a statement calling it may get a spool it does not need
   (https://learn.microsoft.com/archive/blogs/ianjo/make-functions-schema-bound). A bound
   function may call only bound ones
   (https://learn.microsoft.com/sql/t-sql/statements/create-function-transact-sql); the build's
   check schemabinding keeps this one from calling any.
   Its parameter's type dbo.QueueState cannot be dropped while this function uses it, bound or
   not: a migration that replaces the type alters or drops this function first
   (https://learn.microsoft.com/sql/t-sql/statements/drop-type-transact-sql). */
CREATE OR ALTER FUNCTION dbo.QueueIsEditable_fn(@Status dbo.QueueState)
RETURNS BIT
WITH SCHEMABINDING
AS
BEGIN
    IF @Status NOT IN ('Cancelled', 'Paused', 'Terminated', 'Completed', 'PartiallyCompleted')
        RETURN 1;
    RETURN 0;
END;
GO
