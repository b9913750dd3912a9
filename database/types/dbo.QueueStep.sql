SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueStep: The step a multi-step job has reached (Render, Send, Confirm, ...).
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo.QueueStep') IS NULL
    BEGIN
        CREATE TYPE dbo.QueueStep FROM VARCHAR(50) NOT NULL;
    END;
GO
