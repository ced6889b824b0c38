"""Rate limits and the retry policy, pure (the clock is passed in); the circuit breaker has
``test_circuit_policy.py``."""

from __future__ import annotations

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


def test_504_is_retryable_and_no_try_starts_past_the_deadline() -> None:
    from skillstate.upstream.retry import RETRYABLE

    assert 504 in RETRYABLE
    policy = RetryPolicy(attempts=5, base_s=1.0, cap_s=8.0, deadline_s=10.0)
    assert policy.delay(1, rng=lambda: 1.0, spent_s=8.5) == 1.0
    assert policy.delay(1, rng=lambda: 1.0, spent_s=9.5) is None  # would start past it
    assert policy.delay(1, asked_s=3.0, spent_s=6.0) == 3.0
    assert policy.delay(1, asked_s=3.0, spent_s=7.5) is None
