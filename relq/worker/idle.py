"""The idle gate: the idle slots of one worker share one poll.

A slot whose claim came back empty joins the gate. One idle slot at a time, the
poller, claims every POLL_S (so a new item waits at most about POLL_S for a
slot, as with a long-poll); the others sleep on the gate's condition and make no
call at all. When the poller's claim gets work, every waiting slot wakes and
claims at once (there may be more). Stopping wakes every slot at once.

Nothing waits inside SQL Server: each poll is one short claim transaction
(``Next_<Queue>_Batch_trx`` with @WaitMs = 0), and between polls the slots'
connections run no request. A long-poll (@WaitMs > 0) instead holds a SQL
Server worker thread for its whole wait (every WAITFOR statement has a thread
of its own: https://learn.microsoft.com/sql/t-sql/language-elements/waitfor-transact-sql)
and claims every 100 ms, per slot.

The cost, whatever the slot count: at most IDLE_CLAIMS_PER_S claim calls a
second while a worker has been idle for less than FAST_FOR_S (that is at most
IDLE_CLAIMS_PER_S / N claims per idle slot-second for N slots), then the pause
doubles up to the cap (POLL_CAP_S by default: IDLE_CLAIMS_PER_S_LATER claims a
second). The trade: after FAST_FOR_S without work, a new item may wait up to
the cap for a slot instead of POLL_S. The first work any slot claims brings the
pause back to POLL_S.

A gate serves one worker, and a worker one queue and one job type (or every
type): an empty claim for one type says nothing about another, so workers of
different queues or types in one process each have their own gate.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

POLL_S = 0.1  # the pause between the shared poll's claims while idle for less than FAST_FOR_S
FAST_FOR_S = 10.0  # seconds without work polled every POLL_S before the pause grows
POLL_CAP_S = 1.0  # the longest pause by default (Settings.max_poll_s, --max-poll-ms)
BACKOFF = 2.0  # the pause's growth per empty poll past FAST_FOR_S
# The bound: claim calls a second of an idle worker (one queue and type), whatever its slot count,
# in its first FAST_FOR_S idle seconds, and later with the default cap; each call one short transaction.
IDLE_CLAIMS_PER_S = 1 / POLL_S
IDLE_CLAIMS_PER_S_LATER = 1 / POLL_CAP_S

T = TypeVar("T")


class IdleGate:
    """Where a worker's idle slots wait, one of them polling for all (see the module)."""

    def __init__(self, *, poll_s: float = POLL_S, fast_for_s: float = FAST_FOR_S,
                 cap_s: float = POLL_CAP_S, clock: Callable[[], float] = time.monotonic) -> None:
        if not (0 < poll_s <= cap_s):
            raise ValueError(f"the idle poll's cap ({cap_s:g} s) must be at least its pause ({poll_s:g} s)")
        self.poll_s, self.fast_for_s, self.cap_s = poll_s, fast_for_s, cap_s
        self.clock = clock
        self.polls = 0  # claims the poller made
        self._cond = threading.Condition()
        self._stopped = False
        self._polling = False  # an idle slot is the poller
        self._idle = 0  # slots in the gate, the poller included
        self._wakes = 0  # how many times the poller found work: a waiting slot returns when it moves
        self._pause = poll_s
        self._last_work = clock()

    # -- for the slots --------------------------------------------------------------------
    def wait(self, claim: Callable[[], list[T]]) -> list[T]:
        """For a slot whose claim came back empty. As the poller, it claims with ``claim`` after
        each pause and returns the first work it gets; else it sleeps until the poller found work
        or left. Returns [] when the slot is to claim again at once by itself (the poller found
        work) or when the gate stopped. A claim that raises leaves the poll to another idle slot."""
        with self._cond:
            self._idle += 1
            seen = self._wakes
            while self._polling and self._wakes == seen and not self._stopped:
                self._cond.wait()
            if self._wakes != seen or self._stopped:
                self._idle -= 1
                return []
            self._polling = True
        try:
            while True:
                with self._cond:
                    self.pause(self._next_pause())
                    if self._stopped:
                        return []
                    self.polls += 1
                claims = claim()  # outside the lock: the others may join, stop may come
                if claims:
                    self._found_work(wake=True)
                    return claims
        finally:
            with self._cond:
                self._polling = False
                self._idle -= 1
                self._cond.notify_all()  # a slot still waiting takes the poll over

    def worked(self) -> None:
        """A slot's own claim got work: the pause starts again at poll_s (no slot is woken: the
        work was this slot's, and its claim says nothing of more)."""
        self._found_work(wake=False)

    def stop(self) -> None:
        """Wake every slot in the gate at once, for good."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def idle_slots(self) -> int:
        """The slots in the gate now, the poller included."""
        with self._cond:
            return self._idle

    # -- the pause -------------------------------------------------------------------------
    def pause(self, seconds: float) -> None:
        """Called with the gate's lock held: return after ``seconds``, or at once on stop."""
        deadline = time.monotonic() + seconds
        while not self._stopped:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._cond.wait(left)

    def _next_pause(self) -> float:
        if self.clock() - self._last_work < self.fast_for_s:
            self._pause = self.poll_s
        else:
            self._pause = min(self.cap_s, self._pause * BACKOFF)
        return self._pause

    def _found_work(self, *, wake: bool) -> None:
        with self._cond:
            self._last_work = self.clock()
            self._pause = self.poll_s
            if wake:
                self._wakes += 1
                self._cond.notify_all()
