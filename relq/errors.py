"""The one exception type a user of relq's commands can cause, and the numbers of the
errors relq's procedures raise."""

from enum import IntEnum


class RelqError(Exception):
    """A problem the user can fix, reported as one readable line (no traceback)."""


class Msg(IntEnum):
    """relq's error numbers, one per file database/messages/<number>.<Name>.sql (a test
    keeps the two alike); what each means and what to do: docs/errors.md."""

    InsideTransaction = 735701
    OutsideTransaction = 735702
    RowCount = 735703
    NotFound = 735704
    StaleToken = 735705
    IllegalTransition = 735706
    InvalidParameter = 735707
    NotEditable = 735708
    KeyLock = 735709
    TakenOver = 735710
    DuplicateKey = 735711
    JobProcedureRefused = 735714
    MessageNotQueued = 735715
    DeadLetterGone = 735716
    UnknownQueue = 735717
    ControlReason = 735718
    InvalidLimit = 735719
    ScheduleNotFound = 735720
    ScheduleExists = 735721
    NotSchedulable = 735722
    BatchNotFound = 735723
    BatchSealed = 735724

    def __str__(self) -> str:
        # The number, as Python 3.11 prints an IntEnum; 3.10 would print Msg.KeyLock.
        return str(int(self))
