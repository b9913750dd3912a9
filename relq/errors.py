"""The one exception type a user of relq's commands can cause."""


class RelqError(Exception):
    """A problem the user can fix, reported as one readable line (no traceback)."""
