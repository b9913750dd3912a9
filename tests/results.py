"""What relq's procedures return, as one expected value for the offline tests (with
their fakes) and the live tests (against a server)."""

from __future__ import annotations

# The result set of every claim, Next_<Queue>_trx and Next_<Queue>_Batch_trx.
CLAIM_COLUMNS = ["EnqueuedAt", "UpdatedAt", "LeaseUntil", "AttemptNum"]
# The result set of every item control: Cancel_, Pause_, Resume_, Retry_, Reschedule_, Terminate_.
ITEM_COLUMNS = ["EnqueuedAt", "UpdatedAt", "Status", "ScheduledFor"]
# An attempt's Error and Response when nobody wrote one: the columns are dbo.WebResponse,
# NOT NULL, with a default of N'' (database/tables/dbo.<Queue>Attempt.sql), never NULL.
NO_ERROR = ""
