SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* The notification types; each has its subtype table. Rows are only added. */
MERGE dbo.NotificationType AS target
USING (
    VALUES
    ('ResetPassword')
) AS source([Type])
    ON target.[Type] = source.[Type]
WHEN NOT MATCHED BY TARGET
    THEN
    INSERT ([Type]) VALUES (source.[Type]);
GO
