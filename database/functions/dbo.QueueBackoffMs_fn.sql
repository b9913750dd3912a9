SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueBackoffMs_fn: how many milliseconds an item waits after an Error
   outcome on attempt @AttemptNum, from the queue's settings (dbo.AppSettingInt_fn):
   base * factor^(attempt - 1), at most cap, then moved by up to jitter percent
   either way so that items failing together do not come back together. Settings
   out of range count as their nearest sane value (negative as 0, a factor below
   100% as 100%), so a typo slows retries down or speeds them up but never
   breaks a report.
   @Queue: the settings' prefix: notification or syncqueue.
   @AttemptNum: the attempt that just ended, from 1.
   @Random: a number in [0, 1), RAND()'s kind; a function may not call RAND()
     itself, so the caller draws it (0.5 means no jitter). */
CREATE OR ALTER FUNCTION dbo.QueueBackoffMs_fn(
    @Queue VARCHAR(50),
    @AttemptNum INT,
    @Random FLOAT
)
RETURNS BIGINT
AS
BEGIN
    DECLARE @Base FLOAT = dbo.AppSettingInt_fn(@Queue + '.backoffBaseMs');
    DECLARE @Factor FLOAT = dbo.AppSettingInt_fn(@Queue + '.backoffFactorPct') / 100.0;
    DECLARE @Cap FLOAT = dbo.AppSettingInt_fn(@Queue + '.backoffCapMs');
    DECLARE @Jitter FLOAT = dbo.AppSettingInt_fn(@Queue + '.backoffJitterPct') / 100.0;
    DECLARE @Wait FLOAT;

    SELECT
        @Base = CASE WHEN ISNULL(@Base, 0) < 0 THEN 0 ELSE ISNULL(@Base, 0) END,
        @Factor = CASE WHEN ISNULL(@Factor, 1) < 1 THEN 1 ELSE ISNULL(@Factor, 1) END,
        @Cap = CASE WHEN ISNULL(@Cap, 0) < 0 THEN 0 ELSE ISNULL(@Cap, 0) END,
        @Jitter = CASE WHEN ISNULL(@Jitter, 0) < 0 THEN 0 WHEN @Jitter > 1 THEN 1 ELSE ISNULL(@Jitter, 0) END,
        @AttemptNum = CASE WHEN ISNULL(@AttemptNum, 1) < 1 THEN 1 ELSE @AttemptNum END,
        @Random = CASE WHEN @Random IS NULL OR @Random < 0 OR @Random >= 1 THEN 0.5 ELSE @Random END;

    -- Compare exponents, not products: 2^32766 overflows a FLOAT long before the cap
    -- is met. Nested, because T-SQL does not promise to skip LOG(0) in an OR.
    IF (@Base = 0)
        SET @Wait = 0;
    ELSE IF (@Base >= @Cap)
        SET @Wait = @Cap;
    ELSE IF ((@AttemptNum - 1) * LOG(@Factor) >= LOG(@Cap / @Base))
        SET @Wait = @Cap;
    ELSE
        SET @Wait = @Base * POWER(@Factor, @AttemptNum - 1);
    SET @Wait = @Wait * (1 + @Jitter * (2 * @Random - 1));
    RETURN CAST(ROUND(@Wait, 0) AS BIGINT);
END;
GO
