"""The circuit breaker, pure (the clock is passed in): it judges a failure rate over a window
with a minimum volume, probes with a few trials, and never refuses a call that has nowhere
else to go."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from skillstate.upstream.circuit import Circuit, CircuitPolicy, Outcome, State

POLICY = CircuitPolicy(failure_rate=0.5, min_calls=20, window_s=30.0, open_s=30.0, trials=3)
outcomes = st.sampled_from([Outcome.OK, Outcome.FAILED, Outcome.PACED])


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def call(circuit: Circuit, outcome: Outcome, failed_before: int = 0) -> None:
    """One call as ``Forward`` tells it: each try as it ends, then the call's outcome."""
    for _ in range(failed_before):
        circuit.tried(Outcome.FAILED)
    circuit.tried(outcome)
    circuit.record(outcome)


def opened(clock: Clock, policy: CircuitPolicy = POLICY) -> Circuit:
    circuit = Circuit(clock, policy)
    for _ in range(policy.min_calls):
        circuit.record(Outcome.FAILED)
    assert circuit.state is State.OPEN
    return circuit


def test_it_opens_on_the_rate_over_the_volume_not_on_a_run() -> None:
    clock = Clock()
    circuit = Circuit(clock, POLICY)
    for _ in range(19):
        circuit.record(Outcome.FAILED)
    assert circuit.state is State.CLOSED  # 19 failures in a row: below the volume
    circuit.record(Outcome.FAILED)
    assert circuit.state is State.OPEN
    assert circuit.retry_in() == 30.0


def test_a_rate_below_the_threshold_never_opens_it() -> None:
    circuit = Circuit(Clock(), POLICY)
    for i in range(1000):
        circuit.record(Outcome.FAILED if i % 5 in (0, 2) else Outcome.OK)  # 40% fail
    assert circuit.state is State.CLOSED


def test_outcomes_leave_the_window() -> None:
    clock = Clock()
    circuit = Circuit(clock, POLICY)
    for _ in range(19):
        circuit.record(Outcome.FAILED)
    clock.now += 31
    assert circuit.counts() == (0, 0)
    circuit.record(Outcome.FAILED)
    assert circuit.state is State.CLOSED


def test_pacing_is_not_failing() -> None:
    circuit = Circuit(Clock(), POLICY)
    for _ in range(100):
        circuit.record(Outcome.PACED)
    assert circuit.state is State.CLOSED and circuit.counts() == (0, 0)


def test_open_it_reroutes_only_where_there_is_somewhere_else() -> None:
    clock = Clock()
    circuit = opened(clock)
    assert not circuit.allows(elsewhere=True)
    assert circuit.allows(elsewhere=False)  # nowhere else: the call goes anyway
    assert not circuit.healthy


def test_half_open_lets_a_few_trials_through_and_their_successes_close_it() -> None:
    clock = Clock()
    circuit = opened(clock)
    clock.now += 30
    assert circuit.state is State.HALF_OPEN and circuit.healthy
    assert [circuit.allows(elsewhere=True) for _ in range(4)] == [True, True, True, False]
    assert not circuit.healthy
    for _ in range(3):
        circuit.record(Outcome.OK)
    assert circuit.state is State.CLOSED and circuit.counts() == (0, 0)


def test_a_failed_trial_opens_it_again() -> None:
    clock = Clock()
    circuit = opened(clock)
    clock.now += 30
    assert circuit.allows(elsewhere=True)
    circuit.record(Outcome.FAILED)
    assert circuit.state is State.OPEN and circuit.retry_in() == 30.0


def test_trials_that_never_report_are_given_back() -> None:
    clock = Clock()
    circuit = opened(clock)
    clock.now += 30
    assert all(circuit.allows(elsewhere=True) for _ in range(3))
    assert not circuit.allows(elsewhere=True)
    clock.now += 30
    assert circuit.allows(elsewhere=True)


@given(st.lists(outcomes, max_size=19), st.lists(st.floats(0, 5), max_size=19))
def test_below_the_volume_it_never_opens(seen: list[Outcome], gaps: list[float]) -> None:
    clock = Clock()
    circuit = Circuit(clock, POLICY)
    for i, outcome in enumerate(seen):
        clock.now += gaps[i] if i < len(gaps) else 0.0
        circuit.record(outcome)
    assert circuit.state is State.CLOSED


@given(st.lists(outcomes, max_size=200))
def test_opening_needs_the_rate(seen: list[Outcome]) -> None:
    """All at one instant: the circuit opens exactly when some prefix first reaches the
    volume with at least the rate failed."""
    circuit = Circuit(Clock(), POLICY)
    total = failed = 0
    should_open = False
    for outcome in seen:
        if outcome is not Outcome.PACED:
            total += 1
            failed += outcome is Outcome.FAILED
            if outcome is Outcome.FAILED and total >= 20 and failed >= 0.5 * total:
                should_open = True
        circuit.record(outcome)
        if should_open:
            break
    assert (circuit.state is State.OPEN) == should_open


@given(st.lists(st.tuples(outcomes, st.floats(0, 40)), max_size=300))
def test_with_nowhere_else_to_go_every_call_is_allowed(steps: list[tuple[Outcome, float]]) -> None:
    clock = Clock()
    circuit = Circuit(clock, CircuitPolicy(min_calls=3, window_s=10, open_s=5, trials=2))
    for outcome, gap in steps:
        clock.now += gap
        assert circuit.allows(elsewhere=False)
        circuit.record(outcome)


@given(st.lists(st.tuples(outcomes, st.floats(0, 40), st.booleans()), max_size=300))
def test_the_state_is_always_one_of_three_and_consistent(
    steps: list[tuple[Outcome, float, bool]],
) -> None:
    clock = Clock()
    circuit = Circuit(clock, CircuitPolicy(min_calls=3, window_s=10, open_s=5, trials=2))
    for outcome, gap, elsewhere in steps:
        clock.now += gap
        degraded = circuit.degraded
        allowed = circuit.allows(elsewhere)
        if circuit.state is State.CLOSED:
            assert allowed == (not (elsewhere and degraded))
        if circuit.state is State.OPEN and elsewhere:
            assert not allowed
        if allowed:
            circuit.record(outcome)
        total, failed = circuit.counts()
        assert 0 <= failed <= total


def test_failed_tries_degrade_it_and_a_call_with_a_healthy_fallback_goes_there() -> None:
    """Retries absorb a fault, but the tries show it: an upstream failing one try in five
    (below the outcome rate that opens the circuit) is passed over while a fallback is
    healthy, and still serves every call with nowhere else to go."""
    clock = Clock()
    circuit = Circuit(clock, POLICY)
    for i in range(19):
        call(circuit, Outcome.OK, 1 if i % 4 == 0 else 0)
    assert circuit.tries() == (24, 5) and circuit.counts() == (19, 0)
    assert circuit.degraded and circuit.status == "degraded"
    assert circuit.state is State.CLOSED and not circuit.healthy
    assert circuit.passes_over
    assert not circuit.allows(elsewhere=True)
    assert circuit.allows(elsewhere=False)


def test_below_the_reroute_rate_or_the_volume_it_is_not_degraded() -> None:
    circuit = Circuit(Clock(), POLICY)
    for _ in range(15):
        call(circuit, Outcome.OK, 1)  # 15 of 30 tries failed: half
    assert circuit.tries() == (30, 15) and circuit.degraded
    healthy = Circuit(Clock(), POLICY)
    for i in range(100):
        call(healthy, Outcome.OK, 1 if i % 20 == 0 else 0)  # 5 of 105
    assert not healthy.degraded and healthy.healthy and healthy.status == "closed"
    few = Circuit(Clock(), POLICY)
    for _ in range(9):
        call(few, Outcome.FAILED, 1)  # 18 tries, all failed: below 20
    assert not few.degraded


def test_a_degraded_upstream_drains_from_its_window_and_calls_come_back() -> None:
    clock = Clock()
    circuit = Circuit(clock, POLICY)
    for _ in range(10):
        call(circuit, Outcome.OK, 1)
    assert circuit.degraded
    clock.now += 31  # no call came: the window empties
    assert not circuit.degraded and circuit.allows(elsewhere=True)


def test_429s_are_not_failed_tries() -> None:
    circuit = Circuit(Clock(), POLICY)
    for _ in range(50):
        circuit.tried(Outcome.PACED)
        call(circuit, Outcome.OK)
    assert circuit.tries() == (50, 0) and not circuit.degraded


@given(st.lists(st.tuples(outcomes, st.integers(0, 3), st.floats(0, 20)), max_size=200))
def test_the_window_totals_match_what_was_recorded(
    steps: list[tuple[Outcome, int, float]],
) -> None:
    """The running totals are the sums of the calls still in the window, as a slow recount
    over every call recorded finds them (the circuit kept closed: a high opening rate)."""
    clock = Clock()
    policy = CircuitPolicy(failure_rate=1.0, min_calls=10**6, window_s=30, reroute_rate=0.1)
    circuit = Circuit(clock, policy)
    seen: list[tuple[int, Outcome, int]] = []
    for outcome, before, gap in steps:
        clock.now += gap
        call(circuit, outcome, before)
        seen.append((int(clock.now * 10 / 30), outcome, before))
        oldest = int(clock.now * 10 / 30) - 9
        kept = [(o, b) for index, o, b in seen if index >= oldest]
        calls = sum(o is not Outcome.PACED for o, _ in kept)
        failed = sum(o is Outcome.FAILED for o, _ in kept)
        tries = sum(b + (o is not Outcome.PACED) for o, b in kept)
        failed_tries = sum(b + (o is Outcome.FAILED) for o, b in kept)
        assert circuit.counts() == (calls, failed)
        assert circuit.tries() == (tries, failed_tries)
