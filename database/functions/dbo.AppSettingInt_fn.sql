SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.AppSettingInt_fn: a whole-number setting: the row of dbo.AppSettings, or the
   documented default when the row is absent (or NULL, or the name unknown).
   @Param: the setting's name.
   Settings and their defaults, the same for each queue (<queue> is its prefix
   in database/queues.toml; an unknown prefix has no defaults):
     <queue>.maxAttempts            3  claims an item may take before it is Failed
     <queue>.leaseSeconds         300  how long a claim holds an item before another
                                       worker may take it over (Extend_ renews it)
     <queue>.backoffBaseMs       1000  the wait after a first Error outcome ...
     <queue>.backoffFactorPct     200  ... multiplied by this per further attempt ...
     <queue>.backoffCapMs     3600000  ... up to this (before the jitter) ...
     <queue>.backoffJitterPct      10  ... plus or minus this share, at random
   (dbo.QueueBackoffMs_fn turns the backoff settings into a wait.)
   And one for each kind of message queue with dead letters (<kind> is its table's name in
   lower case: fifoqueue, strictfifoqueue, lifostack, pendingqueue, transportmessage):
     <kind>.maxDeliveries           5  failed deliveries (dbo.Fail_<Kind>_trx) after which
                                       a message moves to dbo.DeadLetter; below 1 counts as 1 */
CREATE OR ALTER FUNCTION dbo.AppSettingInt_fn(@Param dbo.SettingName)
RETURNS INT
AS
BEGIN
    RETURN COALESCE(
        (
            SELECT s.ValInt FROM dbo.AppSettings AS s
            WHERE s.Param = @Param
        ),
        (
            SELECT d.ValInt
            FROM (
                VALUES
                ('notification.maxAttempts', 3),
                ('notification.leaseSeconds', 300),
                ('notification.backoffBaseMs', 1000),
                ('notification.backoffFactorPct', 200),
                ('notification.backoffCapMs', 3600000),
                ('notification.backoffJitterPct', 10),
                ('syncqueue.maxAttempts', 3),
                ('syncqueue.leaseSeconds', 300),
                ('syncqueue.backoffBaseMs', 1000),
                ('syncqueue.backoffFactorPct', 200),
                ('syncqueue.backoffCapMs', 3600000),
                ('syncqueue.backoffJitterPct', 10),
                ('fifoqueue.maxDeliveries', 5),
                ('strictfifoqueue.maxDeliveries', 5),
                ('lifostack.maxDeliveries', 5),
                ('pendingqueue.maxDeliveries', 5),
                ('transportmessage.maxDeliveries', 5)
            ) AS d(Param, ValInt)
            WHERE d.Param = @Param
        )
    );
END;
GO
