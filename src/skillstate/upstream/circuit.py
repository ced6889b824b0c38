"""A circuit breaker per upstream (pure; the clock is passed in).

``closed``: calls go through; ``failures`` consecutive failures open it. ``open``: calls are
refused at once for ``open_s`` seconds (the client gets a 503 with ``retry-after``, or a
fallback upstream serves it). Then ``half-open``: one call goes through as a probe; its success
closes the circuit, its failure opens it again for another ``open_s``.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum


class State(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half-open"


class Circuit:
    __slots__ = ("_clock", "_failures", "_opened", "_probing", "failures", "open_s")

    def __init__(self, clock: Callable[[], float], *, failures: int = 5, open_s: float = 30.0):
        self._clock = clock
        self.failures = failures
        self.open_s = open_s
        self._failures = 0
        self._opened: float | None = None
        self._probing = False

    @property
    def state(self) -> State:
        if self._opened is None:
            return State.CLOSED
        if self._clock() - self._opened < self.open_s:
            return State.OPEN
        return State.HALF_OPEN

    def allow(self) -> bool:
        """Whether a call may go now (in half-open, only the one probe)."""
        state = self.state
        if state is State.CLOSED:
            return True
        if state is State.OPEN or self._probing:
            return False
        self._probing = True
        return True

    def retry_in(self) -> float:
        """Seconds until an open circuit lets a probe through."""
        if self._opened is None:
            return 0.0
        return max(0.0, self.open_s - (self._clock() - self._opened))

    def succeeded(self) -> None:
        self._failures = 0
        self._opened = None
        self._probing = False

    def failed(self) -> None:
        self._failures += 1
        if self._probing or self._failures >= self.failures:
            self._opened = self._clock()
        self._probing = False
