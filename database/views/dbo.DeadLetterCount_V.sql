SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.DeadLetterCount_V: how many dead letters wait for an operator, per message queue
   (Kind; Queue for each transport queue, NULL for the other kinds), and when the last of
   them arrived (LastDeadLetteredAt, UTC); no row for a queue without any. For monitoring
   (QueueMonitor reads it) and the dashboard: it reads the narrow IX_DeadLetter_Kind, never
   the letters' payloads, so its cost is one index scan over as many rows as there are
   letters. */
CREATE OR ALTER VIEW dbo.DeadLetterCount_V
AS
SELECT
    d.Kind,
    d.Queue,
    COUNT_BIG(*) AS DeadLetters,
    MAX(d.DeadLetteredAt) AS LastDeadLetteredAt
FROM dbo.DeadLetter AS d
GROUP BY d.Kind, d.Queue;
GO
