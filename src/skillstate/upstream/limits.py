"""Per-upstream rate limits over a rolling minute (pure; the clock is passed in).

``rpm`` caps the requests and ``tpm`` the prompt tokens sent in any 60 seconds. ``admit``
says how long a request must wait until it fits (0: now), or None when it never will (it alone
is over ``tpm``) or would wait longer than ``max_wait_s``; the caller then answers 429 with
``retry-after``. An admitted request is counted at once, so concurrent requests queue fairly
by their order of admission.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

WINDOW_S = 60.0


@dataclass(slots=True)
class Admission:
    wait_s: float | None
    """Seconds to wait before sending; None: refused."""
    retry_after_s: float = 0.0
    """For a refusal: when the request would fit, if ever (0: it never will)."""


@dataclass(slots=True)
class RateLimit:
    clock: Callable[[], float]
    rpm: int | None = None
    tpm: int | None = None
    max_wait_s: float = 10.0
    _sent: deque[tuple[float, int]] = field(default_factory=deque)

    def admit(self, tokens: int) -> Admission:
        now = self.clock()
        self._expire(now)
        if self.tpm is not None and tokens > self.tpm:
            return Admission(None)
        start = max(now, self._fits_at(now, tokens))
        wait = start - now
        if wait > self.max_wait_s:
            return Admission(None, wait)
        self._sent.append((start, tokens))
        return Admission(wait)

    def _expire(self, now: float) -> None:
        while self._sent and self._sent[0][0] <= now - WINDOW_S:
            self._sent.popleft()

    def _fits_at(self, now: float, tokens: int) -> float:
        """The earliest time the window (as it will be then) has room for one more request
        of ``tokens``."""
        times = [t for t, _ in self._sent]
        sizes = [n for _, n in self._sent]
        at = now
        if self.rpm is not None and len(times) >= self.rpm:
            at = max(at, times[len(times) - self.rpm] + WINDOW_S)
        if self.tpm is not None:
            total = sum(sizes)
            for when, size in zip(times, sizes, strict=True):
                if total + tokens <= self.tpm:
                    break
                total -= size
                at = max(at, when + WINDOW_S)
        return at
