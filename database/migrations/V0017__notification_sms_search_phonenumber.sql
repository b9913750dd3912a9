SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* V0017__notification_sms_search_phonenumber: IX_Notification_Sms_SearchPhoneNumber, as
   dbo.Notification_Sms.sql now creates it (its comment gives its purpose and write
   cost): the dashboard finds the notifications sent to a phone number, of every
   state, newest first, one seek a page. Its build reads the whole table once and
   writes an entry of at most about 40 bytes per row. Online where the deploy says
   the edition has online index operations (docs/operations.md, "Index builds";
   "ONLINE",
   https://learn.microsoft.com/sql/t-sql/statements/create-index-transact-sql);
   in a file of its own because the build's last lock lasts until the file commits.
   Guarded: on a new database it changes nothing. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_Notification_Sms_SearchPhoneNumber' AND object_id = OBJECT_ID(N'dbo.Notification_Sms')
    )
    BEGIN
        IF CAST(SESSION_CONTEXT(N'relq.online') AS INT) = 1
            BEGIN
                CREATE NONCLUSTERED INDEX IX_Notification_Sms_SearchPhoneNumber
                    ON dbo.Notification_Sms (PhoneNumber, EnqueuedAt)
                    WITH (ONLINE = ON);
            END;
        ELSE
            BEGIN
                CREATE NONCLUSTERED INDEX IX_Notification_Sms_SearchPhoneNumber
                    ON dbo.Notification_Sms (PhoneNumber, EnqueuedAt);
            END;
    END;
GO
