"""Rate limits, the circuit breaker and the retry policy, pure (the clock is passed in)."""

from __future__ import annotations

from skillstate.upstream.circuit import Circuit, State
from skillstate.upstream.limits import RateLimit
from skillstate.upstream.retry import RetryPolicy, retry_after


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_rpm_waits_for_the_window_then_refuses_past_the_wait() -> None:
    clock = Clock()
    limit = RateLimit(clock, rpm=2, max_wait_s=10)
    assert limit.admit(1).wait_s == 0 and limit.admit(1).wait_s == 0
    refused = limit.admit(1)
    assert refused.wait_s is None and refused.retry_after_s == 60
    clock.now += 55
    assert limit.admit(1).wait_s == 5  # fits when the first send leaves the window


def test_tpm_counts_tokens_and_refuses_what_can_never_fit() -> None:
    clock = Clock()
    limit = RateLimit(clock, tpm=100, max_wait_s=70)
    assert limit.admit(60).wait_s == 0
    assert limit.admit(60).wait_s == 60
    refused = limit.admit(101)
    assert refused.wait_s is None and refused.retry_after_s == 0


def test_the_circuit_opens_probes_and_closes() -> None:
    clock = Clock()
    circuit = Circuit(clock, failures=2, open_s=30)
    circuit.failed()
    assert circuit.state is State.CLOSED and circuit.allow()
    circuit.failed()
    assert circuit.state is State.OPEN and not circuit.allow()
    clock.now += 30
    assert circuit.state is State.HALF_OPEN
    assert circuit.allow() and not circuit.allow()  # one probe at a time
    circuit.failed()
    assert circuit.state is State.OPEN  # a failed probe opens it again
    clock.now += 30
    assert circuit.allow()
    circuit.succeeded()
    assert circuit.state is State.CLOSED


def test_retry_delays_back_off_with_jitter_and_honour_retry_after() -> None:
    policy = RetryPolicy(attempts=3, base_s=1.0, cap_s=8.0)
    assert policy.delay(1, rng=lambda: 1.0) == 1.0
    assert policy.delay(2, rng=lambda: 0.5) == 1.0
    assert policy.delay(3) is None  # attempts spent
    assert policy.delay(1, {"Retry-After": "3"}) == 3.0
    assert policy.delay(1, {"retry-after-ms": "250"}) == 0.25
    assert policy.delay(1, {"retry-after": "60"}) is None  # past the cap: the client decides
    date = "Tue, 01 Dec 2026 20:00:05 GMT"
    assert retry_after({"retry-after": date}, now=1796155200.0) == 5.0
