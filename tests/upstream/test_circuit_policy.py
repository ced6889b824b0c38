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
        allowed = circuit.allows(elsewhere)
        if circuit.state is State.CLOSED:
            assert allowed
        if circuit.state is State.OPEN and elsewhere:
            assert not allowed
        if allowed:
            circuit.record(outcome)
        total, failed = circuit.counts()
        assert 0 <= failed <= total
