"""One client request's trace, as the request path records it: its W3C trace context and
the times of its upstream rounds and attempts, kept as plain numbers for spans made later.

Contract. ``Trace.begin`` continues the client's ``traceparent`` (W3C Trace Context, level 1:
``00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>``; any other form, or an id of all
zeros, starts a new trace), or starts one. Every id is drawn here, once: the request's own span
(``span_id``) and one per upstream attempt (``send``), whose ``traceparent`` the upstream is
sent, so an upstream that traces joins the trace under the attempt that called it. Times are
``time.perf_counter`` readings; ``ns`` turns one into Unix nanoseconds by the wall clock read
when the trace began. Nothing here does I/O or knows of any tracing library."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16
_HEX = frozenset("0123456789abcdef")


@dataclass(slots=True)
class Attempt:
    """One upstream try: its span id (the ``traceparent`` it was sent with), the upstream,
    when it was sent and when it ended (its status known; None: still open), its status (0:
    no answer) and the round (0-based) it belongs to."""

    span_id: str
    upstream: str
    start: float
    round: int
    end: float | None = None
    status: int = 0


@dataclass(slots=True)
class Trace:
    trace_id: str
    span_id: str
    """The client request's own span."""
    parent_id: str | None
    """The client's span, from its ``traceparent``; None: this request starts the trace."""
    flags: str
    arrived: float
    """When the request arrived (``perf_counter``)."""
    wall_ns: int
    """The wall clock at ``arrived``, in Unix nanoseconds."""
    rounds: list[list[float]] = field(default_factory=list)
    """Each upstream round's ``[start, end]`` (``end`` equal to ``start`` while it runs)."""
    attempts: list[Attempt] = field(default_factory=list)

    @classmethod
    def begin(cls, traceparent: str | None, now: float | None = None) -> Trace:
        """The trace of a request that arrived ``now``, continuing ``traceparent`` when it
        is a valid one."""
        arrived = time.perf_counter() if now is None else now
        wall = time.time_ns()
        parsed = parse_traceparent(traceparent) if traceparent else None
        if parsed is None:
            return cls(new_trace_id(), new_span_id(), None, "01", arrived, wall)
        trace_id, parent_id, flags = parsed
        return cls(trace_id, new_span_id(), parent_id, flags, arrived, wall)

    @property
    def traceparent(self) -> str:
        """The request's own span as a ``traceparent`` value."""
        return f"00-{self.trace_id}-{self.span_id}-{self.flags}"

    def ns(self, perf: float) -> int:
        """``perf`` (a ``perf_counter`` reading) in Unix nanoseconds."""
        return self.wall_ns + int((perf - self.arrived) * 1e9)

    # --- recorded as the request goes ------------------------------------------------------

    def enter(self, now: float) -> None:
        """An upstream round (one ``Forward.send``) begins."""
        self.rounds.append([now, now])

    def leave(self, now: float) -> None:
        """The round begun last ended; so did its attempt still open."""
        if self.rounds:
            self.rounds[-1][1] = now
        for attempt in reversed(self.attempts):
            if attempt.end is None:
                attempt.end = now
            break

    def send(self, headers: dict[str, str], upstream: str) -> None:
        """An attempt is sent now with ``headers``: its ``traceparent`` is set there."""
        attempt = Attempt(new_span_id(), upstream, time.perf_counter(), len(self.rounds) - 1)
        self.attempts.append(attempt)
        headers["traceparent"] = f"00-{self.trace_id}-{attempt.span_id}-{self.flags}"

    def attempted(self, status: int) -> None:
        """The attempt sent last has its answer, ``status``: a failure ends it now, a reply
        ends with its round (its body is read within it)."""
        if not self.attempts:
            return
        attempt = self.attempts[-1]
        attempt.status = status
        if status >= 400 or status == 0:
            attempt.end = time.perf_counter()


def parse_traceparent(value: str) -> tuple[str, str, str] | None:
    """The trace id, parent id and flags of a W3C ``traceparent`` value, or None where it is
    not one this gateway can continue (a version other than ``00`` is read by the version 00
    layout, as the specification asks of a version it does not know)."""
    parts = value.strip().lower().split("-")
    if len(parts) < 4 or (parts[0] == "00" and len(parts) != 4):
        return None
    version, trace_id, parent_id, flags = parts[:4]
    if version == "ff" or len(version) != 2 or len(flags) != 2:
        return None
    if len(trace_id) != 32 or len(parent_id) != 16:
        return None
    if not _HEX.issuperset(version + trace_id + parent_id + flags):
        return None
    if trace_id == _ZERO_TRACE or parent_id == _ZERO_SPAN:
        return None
    return trace_id, parent_id, flags


def new_trace_id() -> str:
    """128 random bits (``random``'s generator, as the OpenTelemetry SDK's own ids: no system
    call per id; the interpreter reseeds it in a forked child)."""
    return f"{random.getrandbits(128) or 1:032x}"


def new_span_id() -> str:
    return f"{random.getrandbits(64) or 1:016x}"
