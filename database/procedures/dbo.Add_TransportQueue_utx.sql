SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Add_TransportQueue_utx: declares a transport queue inside the caller's
   transaction (seed 002): the primary queue of an endpoint when @Machine is
   NULL, or the secondary queue <Endpoint>.<Machine> of one of its instances,
   for replies that must reach that instance. Declaring a queue that exists
   changes nothing. A secondary queue needs its primary first.
   @Endpoint: the endpoint's name: letters, digits, _ and -; at most 255 characters.
   @Machine: the instance's machine name, likewise; NULL for the primary.
   @Queue: OUTPUT, the queue's address.
   Returns 0; 1 on error: 735702 outside a transaction, 735703, 735707 a bad name
   or a secondary queue whose primary is not declared. The text parameters are
   wider than dbo.QueueAddress so that an over-long name is refused, not cut. */
CREATE OR ALTER PROCEDURE dbo.Add_TransportQueue_utx
    @Endpoint VARCHAR(400),
    @Machine VARCHAR(400) = NULL,
    @Queue VARCHAR(255) = NULL OUTPUT
AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Add_TransportQueue_utx';
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    SET @Queue = NULL;
    IF (@@TRANCOUNT = 0)
        BEGIN
            RAISERROR (735702, 16, 1, N'dbo.Add_TransportQueue_utx');
            GOTO EXIT_ERROR;
        END;
    -- Names are identifiers: SQL Server ignores trailing spaces when it compares text, so
    -- 'Sales ' would be the queue 'Sales'; and the dot separates endpoint from machine.
    -- LIKE ignores trailing spaces of VARCHAR too, hence the DATALENGTH comparison.
    IF (
        @Endpoint IS NULL OR @Endpoint = '' OR @Endpoint LIKE '%[^A-Za-z0-9_-]%'
        OR DATALENGTH(@Endpoint) <> DATALENGTH(RTRIM(@Endpoint))
    )
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Endpoint is required: letters, digits, _ and - only');
            GOTO EXIT_ERROR;
        END;
    IF (
        @Machine IS NOT NULL
        AND (
            @Machine = '' OR @Machine LIKE '%[^A-Za-z0-9_-]%'
            OR DATALENGTH(@Machine) <> DATALENGTH(RTRIM(@Machine))
        )
    )
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Machine must be letters, digits, _ and - only, or NULL');
            GOTO EXIT_ERROR;
        END;
    IF (LEN(@Endpoint) + ISNULL(1 + LEN(@Machine), 0) > 255)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'the queue address would be longer than 255 characters');
            GOTO EXIT_ERROR;
        END;
    IF (
        @Machine IS NOT NULL
        AND NOT EXISTS (
            SELECT 1 FROM dbo.TransportQueue AS q
            WHERE q.Queue = @Endpoint AND q.Machine IS NULL
        )
    )
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'declare the primary queue of the endpoint first');
            GOTO EXIT_ERROR;
        END;

    SET @Queue = @Endpoint + ISNULL('.' + @Machine, '');
    IF
        EXISTS (
            SELECT 1 FROM dbo.TransportQueue AS q WITH (UPDLOCK, HOLDLOCK)
            WHERE q.Queue = @Queue
        )
        RETURN 0;
    INSERT INTO dbo.TransportQueue (Queue, Endpoint, Machine) VALUES (@Queue, @Endpoint, @Machine);
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;
    IF (@RowCnt <> 1)
        BEGIN
            RAISERROR (735703, 16, 1, @Proc, 1, @RowCnt);
            GOTO EXIT_ERROR;
        END;
    RETURN 0;

    EXIT_ERROR:
    RETURN 1;
END;
GO
