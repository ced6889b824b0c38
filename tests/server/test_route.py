"""How a generation request is served, without sockets: ``route.admit`` and ``route.serve``
over every mode, wire pair, header and lane outcome. A refusal never reaches an upstream, a
lane's answer is never forwarded, and the client's bytes are relayed exactly when nothing
stands in the way."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillstate.conversation import ErrorKind, Wire
from skillstate.protocols.logins import Login
from skillstate.server.route import (
    Admission,
    Answered,
    Arrival,
    Loop,
    Ran,
    Refuse,
    Refused,
    Relay,
    RunLanes,
    Unknown,
    admit,
    expands,
    later_lanes,
    mode_for,
    serve,
    untouched_login,
)
from skillstate.state.mode import Mode, parse_mode
from skillstate.support import jsonio

LANES = ("compaction", "schemas", "style", "effort", "state", "vision", "outputs")
"""The lanes the gateway builds, in their order (``gateway.build_lanes``)."""

wires = st.sampled_from(list(Wire))
modes = st.sampled_from(list(Mode))
mode_headers = st.one_of(
    st.none(), st.sampled_from(["off", "hybrid", "paper", " Paper ", "HYBRID", "bogus", ""])
)
logins = st.sampled_from(list(Login))
lane_choices = st.lists(st.sampled_from(LANES), unique=True).map(
    lambda names: tuple(n for n in LANES if n in names)
)


@st.composite
def arrivals(draw: st.DrawFn, *, readable: bool | None = None) -> Arrival:
    """Any request as read: refused or not, any wire pair (or no upstream), any headers."""
    wire = draw(wires)
    refused = draw(st.booleans()) if readable is None else not readable
    if refused:
        status = draw(st.sampled_from([400, 408, 413, 415]))
        kind = draw(st.sampled_from([None, ErrorKind.INVALID_REQUEST]))
        return Arrival(wire, refused=Refused(status, "bad body", kind), login=draw(logins))
    target = draw(st.one_of(st.none(), wires)) if readable is None else draw(wires)
    upstream = None if target is None else draw(st.sampled_from(["up", "other"]))
    history = draw(st.booleans())
    lost = readable is None and history and expands(wire, target) and draw(st.booleans())
    return Arrival(
        wire,
        model=draw(st.sampled_from(["m", "gpt-x", "claude-y"])),
        session=(draw(st.sampled_from(["s1", "s2"])), draw(st.sampled_from(["header", "fp"]))),
        upstream=upstream,
        target=target,
        configured=target is not None or draw(st.booleans()),
        unknown="resp_lost" if lost else None,
        bypass=draw(st.booleans()),
        mode=draw(mode_headers),
        default_mode=draw(modes),
        lanes=draw(lane_choices),
        reshaped=draw(st.booleans()),
        fallbacks=tuple(draw(st.lists(wires, max_size=3))),
        size=draw(st.sampled_from([10, jsonio.CUT_FROM - 1, jsonio.CUT_FROM, 9 * 2**20])),
        history=history,
        login=draw(logins),
        subscription_rewrite=draw(st.booleans()),
    )


@st.composite
def outcomes(draw: st.DrawFn) -> Ran:
    """What the lanes did: changed or not, answered, followed up (untouched, handover)."""
    followup = draw(st.booleans())
    answered = draw(st.booleans())
    return Ran(
        summary=draw(st.sampled_from(["", "state=hybrid:step3", "schemas=-120"])),
        changed=draw(st.booleans()),
        answered=answered,
        compaction=draw(st.sampled_from([None, "summary"])) if answered else None,
        followup=followup,
        untouched=followup and draw(st.booleans()),
        handover=followup and draw(st.booleans()),
    )


def admitted(arrival: Arrival) -> RunLanes:
    run = admit(arrival)
    assert isinstance(run, RunLanes)
    return run


# --- properties --------------------------------------------------------------------------


@given(arrivals())
def test_only_a_readable_request_with_an_upstream_and_its_history_runs_lanes(
    arrival: Arrival,
) -> None:
    """Refusals never reach an upstream: nothing but ``RunLanes`` leads to one."""
    plan: Admission = admit(arrival)
    runs = arrival.refused is None and arrival.target is not None and arrival.unknown is None
    assert isinstance(plan, RunLanes) == runs
    if arrival.refused is not None:
        refused = arrival.refused
        said = {"x-skillstate-login": arrival.login.value}
        assert plan == Refuse(refused.status, refused.message, refused.kind, said, refused.reason)
    elif arrival.target is None:
        assert isinstance(plan, Refuse)
        assert plan.status == (404 if arrival.configured else 502)
        assert plan.reason == ("model_not_served" if arrival.configured else "no_upstream")
        assert "x-skillstate-upstream" not in plan.headers
    elif arrival.unknown is not None:
        assert plan == Unknown(arrival.unknown, plan.headers)


@given(arrivals(readable=True))
def test_the_mode_is_off_when_bypassed_else_the_header_s_else_the_gateway_s(
    arrival: Arrival,
) -> None:
    run = admitted(arrival)
    if arrival.bypass or run.untouched:
        assert run.mode is Mode.OFF
    else:
        assert run.mode is (parse_mode(arrival.mode) or arrival.default_mode)
    assert run.mode is mode_for(arrival.bypass or run.untouched, arrival.mode, arrival.default_mode)


@given(arrivals(readable=True))
def test_a_subscription_login_runs_no_lane_unless_its_rewrite_was_asked_for(
    arrival: Arrival,
) -> None:
    """An Anthropic subscription login is served in mode off with no lane, whatever the
    headers ask, unless ``subscription_rewrite``; every other login runs as the mode says."""
    run = admitted(arrival)
    subscription = arrival.login is Login.ANTHROPIC_SUBSCRIPTION
    assert run.untouched == (subscription and not arrival.subscription_rewrite)
    assert run.untouched == untouched_login(arrival.login, arrival.subscription_rewrite)
    if run.untouched:
        assert run.mode is Mode.OFF
    rewritten = dataclasses.replace(arrival, subscription_rewrite=True)
    api_key = dataclasses.replace(arrival, login=Login.API_KEY)
    assert admitted(rewritten).mode is admitted(api_key).mode
    assert not admitted(rewritten).untouched


@given(arrivals(readable=True), outcomes())
def test_every_reply_names_its_session_and_upstream_and_a_translation(
    arrival: Arrival, ran: Ran
) -> None:
    run = admitted(arrival)
    headers = serve(arrival, run, ran).headers
    assert headers["x-skillstate-session"] == arrival.session[0]
    assert headers["x-skillstate-session-source"] == arrival.session[1]
    assert headers["x-skillstate-login"] == arrival.login.value
    assert headers["x-skillstate-upstream"] == arrival.upstream
    translated = f"{arrival.wire.value}->{run.target.value}"
    assert headers.get("x-skillstate-translated") == (
        translated if run.target is not arrival.wire else None
    )
    assert headers.get("x-skillstate-lanes") == (ran.summary or None)


@given(arrivals(readable=True), outcomes())
def test_a_lane_s_answer_is_never_forwarded(arrival: Arrival, ran: Ran) -> None:
    service = serve(arrival, admitted(arrival), ran)
    assert isinstance(service, Answered) == ran.answered
    if isinstance(service, Answered):
        assert service.headers.get("x-skillstate-compaction") == ran.compaction
        assert "x-skillstate-mode" not in service.headers
        assert service.lanes == ran.summary


@given(arrivals(readable=True), outcomes())
def test_the_bytes_are_relayed_exactly_when_nothing_stands_in_the_way(
    arrival: Arrival, ran: Ran
) -> None:
    """Same wire, nothing changed, not asked differently; and a lane that follows up left the
    request as it came with no fallback of another wire to serve it."""
    run = admitted(arrival)
    service = serve(arrival, run, ran)
    if ran.answered:
        return
    as_asked = not arrival.reshaped or run.mode is Mode.OFF
    same = run.target is arrival.wire and not ran.changed and as_asked
    crossed = any(wire is not run.target for wire in arrival.fallbacks)
    relayed = same and (not ran.followup or (ran.untouched and not crossed))
    assert isinstance(service, Relay) == relayed
    assert isinstance(service, Loop) == (not relayed)
    assert isinstance(service, Relay | Loop)
    assert service.record.forwarded_original == same
    assert service.record.mode is (run.mode if ran.followup else Mode.OFF)
    assert service.record.lanes == ran.summary
    assert service.headers.get("x-skillstate-mode") == (run.mode.value if ran.followup else None)
    if isinstance(service, Relay):
        assert service.finish == ran.followup


@given(arrivals(readable=True), outcomes())
def test_the_round_loop_is_told_what_it_needs(arrival: Arrival, ran: Ran) -> None:
    run = admitted(arrival)
    service = serve(arrival, run, ran)
    if not isinstance(service, Loop):
        return
    assert service.big == (arrival.size >= jsonio.CUT_FROM)
    other = run.target is not arrival.wire
    assert service.remember == (arrival.wire is Wire.RESPONSES and other and arrival.history)
    if ran.followup and ran.handover and "state" in arrival.lanes:
        after = arrival.lanes[arrival.lanes.index("state") + 1 :]
        assert service.rerun == after
    else:
        assert service.rerun == ()


@given(arrivals(readable=True))
def test_a_bypassed_request_on_its_own_wire_is_relayed_byte_exact(arrival: Arrival) -> None:
    """No lane runs for a bypassed request (``chosen_lanes``): what the lanes did is nothing."""
    arrival = dataclasses.replace(arrival, bypass=True, lanes=(), target=arrival.wire)
    service = serve(arrival, admitted(arrival), Ran())
    assert isinstance(service, Relay) and service.record.forwarded_original
    assert service.record.mode is Mode.OFF
    assert "x-skillstate-mode" not in service.headers


@given(arrivals(), outcomes())
def test_planning_is_pure(arrival: Arrival, ran: Ran) -> None:
    """The same facts give the same route, and planning changes none of them."""
    before = (dataclasses.replace(arrival), dataclasses.replace(ran))
    first = admit(arrival)
    assert admit(arrival) == first
    if isinstance(first, RunLanes):
        assert serve(arrival, first, ran) == serve(arrival, first, ran)
    assert (arrival, ran) == before


# --- cases the properties cover, by name -------------------------------------------------


def arrival(**changes: object) -> Arrival:
    base = Arrival(
        Wire.CHAT,
        model="m",
        session=("s", "header"),
        upstream="up",
        target=Wire.CHAT,
        default_mode=Mode.HYBRID,
        lanes=LANES,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_no_upstream_configured_is_a_502_and_an_unserved_model_a_404() -> None:
    none = admit(arrival(upstream=None, target=None, configured=False))
    assert isinstance(none, Refuse) and (none.status, none.kind) == (502, ErrorKind.UPSTREAM)
    assert "--upstream" in none.message
    unserved = admit(arrival(upstream=None, target=None, model="gpt-x"))
    assert isinstance(unserved, Refuse) and unserved.status == 404
    assert unserved.message == "no configured upstream serves model 'gpt-x'"
    assert unserved.headers == {
        "x-skillstate-session": "s",
        "x-skillstate-session-source": "header",
        "x-skillstate-login": "none",
    }


def test_an_unknown_previous_response_is_the_responses_api_s_404() -> None:
    plan = admit(arrival(wire=Wire.RESPONSES, target=Wire.CHAT, unknown="resp_1"))
    assert isinstance(plan, Unknown) and plan.response_id == "resp_1"
    assert plan.headers["x-skillstate-upstream"] == "up"


@pytest.mark.parametrize(
    ("wire", "target", "written"),
    [
        (Wire.RESPONSES, Wire.CHAT, True),
        (Wire.RESPONSES, Wire.RESPONSES, False),  # the upstream is given the reference
        (Wire.RESPONSES, None, False),
        (Wire.CHAT, Wire.MESSAGES, True),
    ],
)
def test_a_previous_response_is_written_out_only_for_another_wire(
    wire: Wire, target: Wire | None, written: bool
) -> None:
    assert expands(wire, target) is written


def test_a_chat_stream_that_did_not_ask_for_its_usage_goes_through_the_round_loop() -> None:
    plan = arrival(reshaped=True)
    service = serve(plan, admitted(plan), Ran())
    assert isinstance(service, Loop) and not service.record.forwarded_original


@pytest.mark.parametrize("how", ["mode", "bypass"])
def test_in_mode_off_a_chat_stream_that_did_not_ask_for_its_usage_is_relayed(how: str) -> None:
    """Defect 9 of issue 25: off is a byte-exact pass-through, usage or none."""
    plan = arrival(reshaped=True, **({"mode": "off"} if how == "mode" else {"bypass": True}))
    service = serve(plan, admitted(plan), Ran())
    assert isinstance(service, Relay) and service.record.forwarded_original


def test_an_untouched_request_a_lane_follows_up_is_relayed_and_finished() -> None:
    plan = arrival()
    service = serve(plan, admitted(plan), Ran(followup=True, untouched=True))
    assert isinstance(service, Relay) and service.finish
    assert service.headers["x-skillstate-mode"] == "hybrid"


def test_a_fallback_of_another_wire_sends_a_followed_request_through_the_round_loop() -> None:
    plan = arrival(fallbacks=(Wire.CHAT, Wire.MESSAGES))
    followed = serve(plan, admitted(plan), Ran(followup=True, untouched=True))
    assert isinstance(followed, Loop)
    alone = serve(plan, admitted(plan), Ran())  # no lane follows up: relayed all the same
    assert isinstance(alone, Relay) and not alone.finish


def test_a_handover_reruns_the_lanes_after_the_state_lane() -> None:
    plan = arrival()
    service = serve(plan, admitted(plan), Ran(changed=True, followup=True, handover=True))
    assert isinstance(service, Loop) and service.rerun == ("vision", "outputs")
    assert later_lanes(("schemas", "state")) == ()
    assert later_lanes(("schemas", "outputs")) == ()


def test_a_responses_client_on_another_wire_has_its_replies_kept() -> None:
    plan = arrival(wire=Wire.RESPONSES, target=Wire.MESSAGES, history=True)
    service = serve(plan, admitted(plan), Ran())
    assert isinstance(service, Loop) and service.remember
    assert service.headers["x-skillstate-translated"] == "openai-responses->anthropic-messages"


def test_a_compaction_answer_says_so() -> None:
    plan = arrival()
    service = serve(
        plan, admitted(plan), Ran(summary="compaction=summary", answered=True, compaction="summary")
    )
    assert service == Answered(
        {
            "x-skillstate-session": "s",
            "x-skillstate-session-source": "header",
            "x-skillstate-login": "none",
            "x-skillstate-upstream": "up",
            "x-skillstate-lanes": "compaction=summary",
            "x-skillstate-compaction": "summary",
        },
        Mode.HYBRID,
        "compaction=summary",
    )


def test_routes_are_frozen() -> None:
    plan = admitted(arrival())
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.mode = Mode.OFF  # type: ignore[misc]
