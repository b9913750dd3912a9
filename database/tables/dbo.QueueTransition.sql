SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueTransition: the legal lifecycle transitions, as data: an item may go
   from FromStatus to ToStatus. Changing what is legal means changing these rows
   (database/data/dbo.QueueTransition.sql), not the procedures. */
IF OBJECT_ID(N'dbo.QueueTransition', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.QueueTransition (
            FromStatus dbo.QueueState,
            ToStatus dbo.QueueState,
            CONSTRAINT PK_QueueTransition PRIMARY KEY CLUSTERED (FromStatus, ToStatus),
            CONSTRAINT QueueTransition_Leaves_QueueStatus FOREIGN KEY (FromStatus)
            REFERENCES dbo.QueueStatus ([Status]),
            CONSTRAINT QueueTransition_Enters_QueueStatus FOREIGN KEY (ToStatus)
            REFERENCES dbo.QueueStatus ([Status])
        );
    END;
GO
