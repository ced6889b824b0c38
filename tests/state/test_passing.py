"""``state.passing``: which hybrid requests may be relayed unread, and what the lane catches up
on afterwards."""

from __future__ import annotations

from skillstate.state.passing import Passing


def test_only_a_session_the_lane_passed_through_and_a_request_short_of_a_boundary_pass() -> None:
    passing = Passing(entries=8, min_turns=12)
    assert not passing.passes("a", 1)  # never seen: the lane reads its first request
    passing.kept("a", step=1)
    assert passing.passes("a", 11)
    assert not passing.passes("a", 12)  # as many messages as a boundary needs turns
    assert not passing.passes("b", 1)


def test_relayed_requests_count_steps_the_lane_takes_over() -> None:
    passing = Passing(entries=8, min_turns=12)
    passing.kept("a", step=3)
    assert [passing.relayed("a") for _ in range(3)] == [4, 5, 6]
    assert passing.relayed_since("a") == 3
    assert passing.taken("a") == 3
    assert not passing.passes("a", 1)  # the lane's again, until it keeps it
    assert passing.taken("a") == 0


def _one_relayed() -> Passing:
    """Session ``a`` passed through at step 1, and one request of it relayed since."""
    passing = Passing(entries=8, min_turns=12)
    passing.kept("a", step=1)
    passing.relayed("a")
    return passing


def test_a_boundary_asked_for_stops_relaying_and_keeps_what_to_catch_up_on() -> None:
    passing = _one_relayed()
    passing.hold("a")
    assert not passing.passes("a", 1)
    assert passing.taken("a") == 1


def test_a_reset_forgets_and_a_min_turns_of_zero_passes_nothing() -> None:
    passing = _one_relayed()
    passing.forget("a")
    assert passing.taken("a") == 0
    never = Passing(entries=8, min_turns=0)
    never.kept("a", step=1)
    assert not never.passes("a", 0)


def test_memory_is_bounded_by_sessions() -> None:
    passing = Passing(entries=2, min_turns=12)
    for session in "abc":
        passing.kept(session, step=1)
    assert not passing.passes("a", 1)  # the least recently used went
    assert passing.passes("b", 1) and passing.passes("c", 1)
