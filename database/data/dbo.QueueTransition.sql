SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* The legal transitions of the lifecycle, the one place that says what may
   follow what. This file is the whole truth: rows missing here are deleted.
   Pending    -> Processing (claimed), Cancelled, Paused
   Processing -> Processing (a step advance), Completed, PartiallyCompleted,
                 Error (to be retried), Failed, Cancelled, Terminated,
                 Pending (released unworked by its worker, which gives the
                 attempt back: a worker shutting down)
   Error      -> Processing (the retry), Failed, Cancelled, Paused
   Paused     -> Pending (resumed), Cancelled
   Failed     -> Pending (retried by hand; Modify_ starts the attempts again)
   Modify_ refuses a paused item (dbo.QueueIsEditable_fn): the Paused rows are
   for the item-level controls (resume, cancel) that come with worker leases. */
MERGE dbo.QueueTransition AS target
USING (
    VALUES
    ('Pending', 'Processing'),
    ('Pending', 'Cancelled'),
    ('Pending', 'Paused'),
    ('Processing', 'Processing'),
    ('Processing', 'Completed'),
    ('Processing', 'PartiallyCompleted'),
    ('Processing', 'Error'),
    ('Processing', 'Failed'),
    ('Processing', 'Cancelled'),
    ('Processing', 'Terminated'),
    ('Processing', 'Pending'),
    ('Error', 'Processing'),
    ('Error', 'Failed'),
    ('Error', 'Cancelled'),
    ('Error', 'Paused'),
    ('Paused', 'Pending'),
    ('Paused', 'Cancelled'),
    ('Failed', 'Pending')
) AS source(FromStatus, ToStatus)
    ON target.FromStatus = source.FromStatus AND target.ToStatus = source.ToStatus
WHEN NOT MATCHED BY TARGET
    THEN
    INSERT (FromStatus, ToStatus) VALUES (source.FromStatus, source.ToStatus)
WHEN NOT MATCHED BY SOURCE
    THEN
    DELETE;
GO
