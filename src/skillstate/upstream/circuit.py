"""A circuit breaker per upstream (pure; the clock is passed in).

The contract:

* An upstream is judged by the outcomes of the calls made to it, one per upstream call (a
  round of a client request with all its retries: a request that failed twice and then
  succeeded is one success), over a rolling window of ``window_s`` seconds. A 429 is the
  provider pacing its clients, not failing: it is ``Outcome.PACED`` and is not counted.
* ``closed``: calls go through. It opens when, within the window, at least ``min_calls``
  outcomes were counted and at least ``failure_rate`` of them failed. A run of failures below
  the volume never opens it.
* ``degraded`` (closed still): the tries are counted too, each failed try (429s aside) as a
  failure, so retries that absorbed a fault still show it. When at least ``min_calls`` tries
  were made in the window and at least ``reroute_rate`` of them failed, the upstream is
  degraded: a call that has a healthy fallback (closed and not degraded itself) goes there
  instead; a call with nowhere else to go goes through. A degraded upstream that gets no
  calls drains from its window, and the calls that then come back to it are its probes. A
  stream that broke after its first byte is a failed try and a failed call, reported when it
  ends.
* ``open`` for ``open_s`` seconds: a call that has somewhere else to go (a fallback whose own
  circuit would take it) goes there; a call with nowhere else to go goes through anyway. A
  circuit with nowhere to send traffic only adds failures: it never refuses alone.
* ``half-open`` after that: up to ``trials`` calls at once go through as trials (and every
  call with nowhere else to go). ``trials`` successes close the circuit with a fresh window; a
  failure opens it again for ``open_s``. Trials that never report (a call abandoned) are given
  back after ``open_s``.
* Shared (``upstream.shared_circuits``, several gateways on one Redis): the outcomes the other
  gateways counted in the window (``observe``) are judged with this one's own, and a circuit
  another gateway opened opens this one until the same moment. What this one counted since it
  last said so is ``unsent``; that it opened, ``opened_unsent``.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum


class State(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half-open"


class Outcome(StrEnum):
    OK = "ok"
    FAILED = "failed"
    PACED = "paced"
    """A 429, or a call that ended without a verdict (abandoned): not counted."""


@dataclass(frozen=True, slots=True)
class CircuitPolicy:
    failure_rate: float = 0.5
    """The share of failed outcomes in the window that opens the circuit."""
    min_calls: int = 20
    """The fewest outcomes in the window for the rate to count at all."""
    window_s: float = 30.0
    open_s: float = 30.0
    trials: int = 3
    """Calls let through at once while half-open; this many successes close the circuit."""
    reroute_rate: float = 0.1
    """The share of failed tries in the window from which a call with a healthy fallback is
    sent there instead (``degraded``)."""


BUCKETS = 10
"""The window is kept as this many counts (one per ``window_s / BUCKETS`` seconds), so its
memory does not grow with the request rate."""


CALLS, FAILED, TRIES, FAILED_TRIES = 1, 2, 3, 4
"""The counts of a bucket, after its index at 0."""
Counts = tuple[int, int, int, int]
"""Calls, failed calls, tries, failed tries."""
NONE: Counts = (0, 0, 0, 0)


class Circuit:
    __slots__ = (
        "_buckets",
        "_clock",
        "_opened",
        "_others",
        "_passed",
        "_sent",
        "_totals",
        "_trial_at",
        "_trials",
        "opened_unsent",
        "policy",
    )

    def __init__(self, clock: Callable[[], float], policy: CircuitPolicy | None = None) -> None:
        self._clock = clock
        self.policy = policy or CircuitPolicy()
        self._buckets: deque[list[int]] = deque()
        """``[bucket index, calls, failed calls, tries, failed tries]``, oldest first."""
        self._totals = [0, 0, 0, 0, 0]
        """The sums of the buckets kept (index 0 unused)."""
        self._opened: float | None = None
        self._trials = 0
        """Trials out now (half-open)."""
        self._trial_at = 0.0
        self._passed = 0
        """Trials that succeeded since the circuit went half-open."""
        self._others = [0, 0, 0, 0, 0]
        """What the other gateways counted in the window, as last observed (index 0 unused):
        counted in ``_totals`` too."""
        self._sent: dict[int, list[int]] = {}
        """Each bucket as ``unsent`` last saw it."""
        self.opened_unsent = False
        """Whether this circuit opened since it last said so (``shared_circuits``)."""

    @property
    def state(self) -> State:
        if self._opened is None:
            return State.CLOSED
        if self._clock() - self._opened < self.policy.open_s:
            return State.OPEN
        return State.HALF_OPEN

    @property
    def degraded(self) -> bool:
        """Closed, but failing at least ``reroute_rate`` of its tries in the window."""
        if not self._totals[FAILED_TRIES] or self._opened is not None:
            return False  # the common case: no failed try in the window
        self._expire()
        tries, failed = self._totals[TRIES], self._totals[FAILED_TRIES]
        return tries >= self.policy.min_calls and failed >= self.policy.reroute_rate * tries

    @property
    def status(self) -> str:
        """The state as reported: ``degraded`` for a closed circuit that is."""
        state = self.state
        return "degraded" if state is State.CLOSED and self.degraded else state.value

    @property
    def healthy(self) -> bool:
        """Whether a call rerouted here would be taken (closed and not degraded, or a trial
        is free)."""
        state = self.state
        if state is State.CLOSED:
            return not self.degraded
        return state is State.HALF_OPEN and self._free_trial()

    @property
    def passes_over(self) -> bool:
        """Whether a call that has a healthy fallback goes there instead of here now (open,
        half-open with no trial free, or degraded); asking takes no trial."""
        state = self.state
        if state is State.CLOSED:
            return self.degraded
        return state is State.OPEN or not self._free_trial()

    def allows(self, elsewhere: bool) -> bool:
        """Whether a call goes to this upstream now; ``elsewhere``: whether it has a healthy
        fallback to go to instead. Without one the answer is always yes."""
        state = self.state
        if state is State.CLOSED:
            return not (elsewhere and self.degraded)
        if state is State.HALF_OPEN and self._free_trial():
            self._trials += 1
            self._trial_at = self._clock()
            return True
        return not elsewhere

    def tried(self, outcome: Outcome) -> None:
        """One try's outcome, as soon as it is known (a 429 is not counted). Closed only: the
        tries of an open circuit's calls are judged by their calls' outcomes."""
        if outcome is Outcome.PACED or self._opened is not None:
            return
        self._add(TRIES, FAILED_TRIES, outcome is Outcome.FAILED)

    def record(self, outcome: Outcome) -> None:
        """One call's outcome, once it is known (its tries are told to ``tried``)."""
        state = self.state
        if state is not State.CLOSED:
            self._trial_ended(state, outcome)
            return
        if outcome is Outcome.PACED:
            return
        failed = outcome is Outcome.FAILED
        self._add(CALLS, FAILED, failed)
        if failed:
            self._judge()

    def _add(self, total: int, failures: int, failed: bool) -> None:
        counts = self._bucket()
        counts[total] += 1
        self._totals[total] += 1
        if failed:
            counts[failures] += 1
            self._totals[failures] += 1

    def unsent(self) -> Counts:
        """What this circuit counted since the last call, to tell the others: the growth of
        its buckets since then (nothing on the request path counts it twice)."""
        counts = [0, 0, 0, 0, 0]
        before = self._sent
        self._sent = {}
        for bucket in self._buckets:
            was = before.get(bucket[0])
            for at in (CALLS, FAILED, TRIES, FAILED_TRIES):
                counts[at] += bucket[at] - (was[at] if was else 0)
            self._sent[bucket[0]] = bucket.copy()
        return counts[CALLS], counts[FAILED], counts[TRIES], counts[FAILED_TRIES]

    def observe(self, others: Counts, open_for: float | None = None) -> None:
        """What the other gateways counted in the window now, and, where one of them opened
        this upstream's circuit, for how many more seconds it stays open: a closed circuit
        opens until then; then the whole count is judged, as a failure here would be. The
        others' counts are in the totals beside this one's own, until observed again."""
        totals, was = self._totals, self._others
        self._others = [0, *others]
        for at in (CALLS, FAILED, TRIES, FAILED_TRIES):
            totals[at] += self._others[at] - was[at]
        if open_for is not None and open_for > 0 and self._opened is None:
            self._open()
            self._opened = self._clock() - max(0.0, self.policy.open_s - open_for)
            self.opened_unsent = False  # the others know: it was theirs
        elif self._opened is None and others[FAILED - 1]:
            self._judge()

    def retry_in(self) -> float:
        """Seconds until an open circuit lets trials through (0: not open)."""
        if self._opened is None:
            return 0.0
        return max(0.0, self.policy.open_s - (self._clock() - self._opened))

    def counts(self) -> tuple[int, int]:
        """The outcomes and the failures in the window now (the other gateways' included)."""
        self._expire()
        return self._totals[CALLS], self._totals[FAILED]

    def tries(self) -> tuple[int, int]:
        """The tries and the failed tries in the window now (the other gateways' included)."""
        self._expire()
        return self._totals[TRIES], self._totals[FAILED_TRIES]

    def _free_trial(self) -> bool:
        if self._trials and self._clock() - self._trial_at >= self.policy.open_s:
            self._trials = 0  # trials that never reported: given back
        return self._trials < self.policy.trials

    def _trial_ended(self, state: State, outcome: Outcome) -> None:
        self._trials = max(0, self._trials - 1)
        if state is State.OPEN or outcome is Outcome.PACED:
            return  # open: calls sent anyway are not trials; paced: no verdict
        if outcome is Outcome.FAILED:
            self._open()
            return
        self._passed += 1
        if self._passed >= self.policy.trials:
            self._opened, self._trials, self._passed = None, 0, 0
            self._clear()

    def _judge(self) -> None:
        total, failed = self.counts()
        policy = self.policy
        if total >= policy.min_calls and failed >= policy.failure_rate * total:
            self._open()

    def _open(self) -> None:
        self._opened = self._clock()
        self._trials, self._passed = 0, 0
        self.opened_unsent = True
        self._clear()

    def _clear(self) -> None:
        self._buckets.clear()
        self._totals = [0, 0, 0, 0, 0]
        self._others = [0, 0, 0, 0, 0]
        self._sent = {}

    def _index(self) -> int:
        return math.floor(self._clock() * BUCKETS / self.policy.window_s)

    def _expire(self) -> None:
        oldest = self._index() - BUCKETS + 1
        while self._buckets and self._buckets[0][0] < oldest:
            gone = self._buckets.popleft()
            for at in (CALLS, FAILED, TRIES, FAILED_TRIES):
                self._totals[at] -= gone[at]

    def _bucket(self) -> list[int]:
        """The count of now. Counts expire as a new one begins: while the last one is now's,
        every older one due to go has gone (it went when that one began)."""
        index = self._index()
        buckets = self._buckets
        if buckets and buckets[-1][0] == index:
            return buckets[-1]
        self._expire()
        buckets.append([index, 0, 0, 0, 0])
        return buckets[-1]
