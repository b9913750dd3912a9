SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* The nine lifecycle states of seed 000. Rows are only added: a state in use
   by a queue row cannot be removed, and removing one is a migration's job. */
MERGE dbo.QueueStatus AS target
USING (
    VALUES
    ('Pending'),
    ('Processing'),
    ('Error'),
    ('Failed'),
    ('Completed'),
    ('Cancelled'),
    ('Paused'),
    ('Terminated'),
    ('PartiallyCompleted')
) AS source([Status])
    ON target.[Status] = source.[Status]
WHEN NOT MATCHED BY TARGET
    THEN
    INSERT ([Status]) VALUES (source.[Status]);
GO
