"""When to try an upstream call again, and how long to wait first (pure).

A call is retried only before any byte of its reply reached the client, on what a provider
means as "try again": a connection that failed or was reset, a timeout before the first byte,
the statuses 429, 500, 502, 503, 504 and 529, and any failure the gateway marked retryable (a
reply cut short before anything of it was relayed). The wait doubles from ``base_s`` with full
jitter, up to ``cap_s``; a ``Retry-After`` (seconds or an HTTP date) or ``retry-after-ms`` from
the provider is honoured instead, unless it asks for more than ``cap_s`` (then the call is not
retried and the client gets the provider's answer, with its ``retry-after``, to decide itself).
No try starts after ``deadline_s`` seconds from the first: a wait that would end past it is not
made.
"""

from __future__ import annotations

import email.utils
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass

RETRYABLE = frozenset({429, 500, 502, 503, 504, 529})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    attempts: int = 3
    """Tries in all, the first included."""
    base_s: float = 0.25
    cap_s: float = 8.0
    deadline_s: float = 600.0
    """The most seconds from the first try to the start of the last."""

    def delay(
        self,
        attempt: int,
        headers: Mapping[str, str] | None = None,
        *,
        now: float = 0.0,
        rng: Callable[[], float] = random.random,
        asked_s: float | None = None,
        spent_s: float = 0.0,
    ) -> float | None:
        """Seconds to wait before try ``attempt + 1`` after try ``attempt`` failed, ``spent_s``
        seconds after the first began; None when there is no next try (the attempts or the
        deadline are spent, or the provider asked for too long). ``asked_s``: the wait the
        provider asked for, when already read from its ``headers``."""
        if attempt >= self.attempts:
            return None
        asked = asked_s if asked_s is not None else retry_after(headers or {}, now)
        if asked is not None:
            wait: float | None = asked if asked <= self.cap_s else None
        else:
            wait = rng() * min(self.cap_s, self.base_s * 2.0 ** (attempt - 1))
        if wait is None or spent_s + wait > self.deadline_s:
            return None
        return wait


def retry_after(headers: Mapping[str, str], now: float) -> float | None:
    """The wait a provider asked for, in seconds: ``retry-after-ms``, else ``retry-after`` as
    seconds or as an HTTP date (RFC 9110 section 10.2.3); None when it asked none."""
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now)
