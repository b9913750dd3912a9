SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* The job types of dbo.SyncQueue. Rows are only added. */
MERGE dbo.SyncQueueType AS target
USING (
    VALUES
    ('CustomerSync'),
    ('InventorySync')
) AS source([Type])
    ON target.[Type] = source.[Type]
WHEN NOT MATCHED BY TARGET
    THEN
    INSERT ([Type]) VALUES (source.[Type]);
GO
