SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Notification_ResetPasswordItemList: password-reset notifications to enqueue in
   one call (dbo.Add_Notification_ResetPassword_Batch_trx), one row per notification.
   ItemNo numbers the items; keys are handed out in ItemNo order and returned with it.
   The text columns are wider than the columns they fill, as the parameters of
   dbo.Add_Notification_ResetPassword_utx are: SQL Server would refuse (or cut) an
   over-long value without saying which item had it, so the procedure checks each
   length and names the item instead. Every column but ItemNo may be NULL for the
   same reason. A table type cannot name its constraints, so its key is unnamed. */
IF TYPE_ID(N'dbo.Notification_ResetPasswordItemList') IS NULL
    BEGIN
        CREATE TYPE dbo.Notification_ResetPasswordItemList AS TABLE (
            ItemNo INT NOT NULL,
            UserID INT NULL,
            Username NVARCHAR(400) NULL,
            OTP VARCHAR(400) NULL,
            EmailTo NVARCHAR(400) NULL,
            PreferredLanguage NVARCHAR(400) NULL,
            PhoneNumber VARCHAR(400) NULL,
            ScheduledFor DATETIME2(7) NULL,
            [Priority] INT NULL,
            GroupKey NVARCHAR(400) NULL,
            DedupKey NVARCHAR(400) NULL,
            PRIMARY KEY (ItemNo)
        );
    END;
GO
