"""The round loop, without sockets: any interleaving of internal and client calls, parallel
ones too, ends with the client seeing only its own calls, every continued request pairing
each call with its result, and the loop bounded."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from skillstate.conversation import (
    Accumulator,
    Delta,
    Event,
    Failure,
    Finish,
    Message,
    Params,
    Part,
    PartEnd,
    PartStart,
    Request,
    Response,
    Start,
    StopReason,
    Text,
    ToolCall,
    ToolResult,
    Usage,
    Wire,
)
from skillstate.state.rounds import (
    RETRY_ROUND,
    Answer,
    Check,
    Done,
    Policy,
    Rounds,
    Send,
    Step,
)

INTERNAL = frozenset({"skill_state", "recall"})
POLICY = Policy(internal=INTERNAL, max_rounds=3)


def request(stream: bool = False) -> Request:
    return Request(
        model="m",
        messages=[Message("user", [Text("go")])],
        source=Wire.CHAT,
        params=Params(stream=stream),
    )


#: Each round's usage: every figure, so that a sum that leaves one out shows.
ROUND_USAGE = Usage(
    input=10, output=2, cached_input=6, cache_write=3, reasoning=1, cache_write_1h=2
)


def reply(parts: list[Part], n: int) -> Response:
    calls = any(isinstance(p, ToolCall) for p in parts)
    return Response(
        id=f"r{n}",
        model="m",
        message=Message("assistant", parts),
        source=Wire.CHAT,
        stop_reason=StopReason.TOOL_CALLS if calls else StopReason.END,
        usage=ROUND_USAGE,
    )


names = st.sampled_from(["skill_state", "recall", "lookup", "shell"])


@st.composite
def replies(draw: st.DrawFn) -> list[list[Part]]:
    """Several upstream replies, each with text and any mix of calls (parallel ones too)."""
    out = []
    for n in range(draw(st.integers(1, 6))):
        parts: list[Part] = []
        if draw(st.booleans()):
            parts.append(Text(f"text {n}"))
        for k, name in enumerate(draw(st.lists(names, max_size=4))):
            parts.append(ToolCall(f"c{n}_{k}", name, "{}"))
        out.append(parts)
    return out


@dataclass
class Run:
    sends: list[Request]
    done: Response
    shown: list[Event]


def drive_json(script: list[list[Part]], policy: Policy = POLICY) -> Run:
    rounds = Rounds(request(), policy)
    step: Step = rounds.first()
    sends: list[Request] = []
    n = 0
    while not isinstance(step, Done):
        if isinstance(step, Send):
            sends.append(step.request)
            parts = script[min(n, len(script) - 1)]
            step = rounds.replied(reply(list(parts), n))
            n += 1
        elif isinstance(step, Answer):
            assert all(c.name in policy.internal for c in step.calls)
            step = rounds.answered([(c, f"answer {c.id}") for c in step.calls])
        else:
            assert isinstance(step, Check)
            step = rounds.checked(None)
    return Run(sends, step.response, [])


def stream_events(parts: list[Part], n: int) -> list[Event]:
    events: list[Event] = [Start(f"r{n}", "m")]
    for index, part in enumerate(parts):
        if isinstance(part, Text):
            events += [PartStart(index, Text("")), Delta(index, part.text)]
        else:
            assert isinstance(part, ToolCall)
            events += [PartStart(index, ToolCall(part.id, part.name, "")), Delta(index, "{}")]
        events.append(PartEnd(index))
    calls = any(isinstance(p, ToolCall) for p in parts)
    return [
        *events,
        Finish(StopReason.TOOL_CALLS if calls else StopReason.END, Usage(input=10, output=2)),
    ]


def drive_stream(script: list[list[Part]], policy: Policy = POLICY) -> Run:
    rounds = Rounds(request(stream=True), policy)
    step: Step = rounds.first()
    sends: list[Request] = []
    shown: list[Event] = []
    n = 0
    while not isinstance(step, Done):
        if isinstance(step, Send):
            sends.append(step.request)
            rounds.begin(Wire.CHAT)
            for event in stream_events(script[min(n, len(script) - 1)], n):
                shown += rounds.view(event)
            step = rounds.ended()
            n += 1
        elif isinstance(step, Answer):
            step = rounds.answered([(c, f"answer {c.id}") for c in step.calls])
        else:
            assert isinstance(step, Check)
            step = rounds.checked(None)
    shown += rounds.closing()
    return Run(sends, step.response, shown)


def client_calls(parts: list[Part]) -> list[str]:
    return [p.id for p in parts if isinstance(p, ToolCall) and p.name not in INTERNAL]


def check_pairs(sent: Request) -> None:
    """Every call in a request the loop sent has its result, right after it."""
    messages = sent.messages
    for i, message in enumerate(messages):
        calls = [p.id for p in message.parts if isinstance(p, ToolCall)]
        if not calls:
            continue
        following = messages[i + 1 : i + 1 + len(calls)]
        answered = [p.call_id for m in following for p in m.parts if isinstance(p, ToolResult)]
        assert answered == calls


def last_reply(run: Run, script: list[list[Part]]) -> list[Part]:
    return script[min(len(run.sends) - 1, len(script) - 1)]


@settings(max_examples=300, deadline=None)
@given(replies())
def test_json_the_client_sees_only_its_own_calls(script: list[list[Part]]) -> None:
    run = drive_json(script)
    parts = run.done.message.parts
    assert not any(isinstance(p, ToolCall) and p.name in INTERNAL for p in parts)
    # Its own calls are those of the reply that ended the loop, all of them.
    assert client_calls(parts) == client_calls(last_reply(run, script))
    assert len(run.sends) <= POLICY.max_rounds + 1
    for sent in run.sends:
        check_pairs(sent)
    rounds = len(run.sends)
    assert run.done.usage == Usage(
        input=10 * rounds,
        output=2 * rounds,
        cached_input=6 * rounds,
        cache_write=3 * rounds,
        reasoning=rounds,
        cache_write_1h=2 * rounds,
    )
    if not client_calls(parts):
        assert run.done.stop_reason is StopReason.END


@settings(max_examples=300, deadline=None)
@given(replies())
def test_stream_the_client_sees_only_its_own_calls(script: list[list[Part]]) -> None:
    run = drive_stream(script)
    starts = [e for e in run.shown if isinstance(e, PartStart)]
    assert not any(isinstance(e.part, ToolCall) and e.part.name in INTERNAL for e in starts)
    # Parts are numbered once each, in order, across rounds; deltas only for shown parts.
    assert [e.index for e in starts] == list(range(len(starts)))
    shown_indexes = {e.index for e in starts}
    assert all(e.index in shown_indexes for e in run.shown if isinstance(e, Delta | PartEnd))
    # One Start first, one Finish last, with every round's usage.
    assert isinstance(run.shown[0], Start) and sum(isinstance(e, Start) for e in run.shown) == 1
    assert run.done.id == run.shown[0].id  # named as the client's stream names it
    final = run.shown[-1]
    assert isinstance(final, Finish) and final.usage == run.done.usage
    assert sum(isinstance(e, Finish) for e in run.shown) == 1
    # What the client's stream adds up to is the reply the loop reports.
    accumulator = Accumulator(Wire.CHAT)
    for event in run.shown:
        accumulator.add(event)
    seen = accumulator.response().message.parts
    assert client_calls(seen) == client_calls(run.done.message.parts)
    assert client_calls(seen) == client_calls(last_reply(run, script))
    assert len(run.sends) <= POLICY.max_rounds + 1
    for sent in run.sends:
        check_pairs(sent)


def test_without_internal_tools_the_start_goes_out_at_once() -> None:
    rounds = Rounds(request(stream=True))
    rounds.begin(Wire.CHAT)
    assert rounds.view(Start("r", "m")) == [Start("r", "m")]


def test_with_internal_tools_the_start_waits_for_a_visible_event() -> None:
    rounds = Rounds(request(stream=True), POLICY)
    rounds.begin(Wire.CHAT)
    assert rounds.view(Start("r", "m")) == []
    assert rounds.view(PartStart(0, ToolCall("c", "recall", ""))) == []
    assert rounds.view(Delta(0, "{}")) == []
    assert rounds.started is False  # a failing hidden round can still get an HTTP error
    shown = rounds.view(PartStart(1, Text("")))
    assert [type(e) for e in shown] == [Start, PartStart]
    assert shown[1] == PartStart(0, Text(""))  # numbered as the client's first part


def test_a_failure_mid_stream_ends_the_loop() -> None:
    rounds = Rounds(request(stream=True), POLICY)
    rounds.begin(Wire.CHAT)
    rounds.view(Start("r", "m"))
    rounds.view(PartStart(0, ToolCall("c", "skill_state", "")))
    shown = rounds.view(Failure("broken"))
    assert [type(e) for e in shown] == [Start, Failure]
    assert isinstance(rounds.ended(), Done)
    assert rounds.closing() == []


def test_a_stream_continued_past_a_hidden_round_keeps_the_first_rounds_name() -> None:
    """The client's stream opened with round 0's ``Start``: the reply it adds up to goes by
    that id, not by the id of the round that ended the turn."""
    run = drive_stream([[ToolCall("c0", "skill_state", "{}")], [Text("done")]])
    assert len(run.sends) == 2
    assert run.shown[0] == Start("r0", "m")
    assert run.done.id == "r0"


def test_paper_json_retries_with_the_note_then_stops() -> None:
    policy = Policy(check=True, retries=2)
    rounds = Rounds(request(), policy)
    step: Step = rounds.first()
    sends = 0
    while not isinstance(step, Done):
        if isinstance(step, Send):
            sends += 1
            step = rounds.replied(reply([Text("not an envelope")], sends))
        else:
            assert isinstance(step, Check)
            step = rounds.checked("reply with a JSON envelope")
    assert sends == 3  # the first try and two retries
    assert isinstance(step, Done)
    assert rounds.causes == ["", RETRY_ROUND, RETRY_ROUND]  # what the ledger says of each


def test_paper_streams_are_checked_once_and_never_retried() -> None:
    rounds = Rounds(request(stream=True), Policy(check=True, retries=2))
    assert isinstance(rounds.first(), Send)
    rounds.begin(Wire.CHAT)
    for event in stream_events([Text("not an envelope")], 0):
        rounds.view(event)
    step = rounds.ended()
    assert isinstance(step, Check)
    assert isinstance(rounds.checked("reply with a JSON envelope"), Done)


ACTION_POLICY = Policy(check=True, retries=1, answer_action=True)
ENVELOPE = '{"state_patch": {"step": 2}, "action": "The table is clean."}'


def test_paper_json_without_tools_answers_with_the_action() -> None:
    rounds = Rounds(request(), ACTION_POLICY)
    rounds.first()
    assert isinstance(rounds.replied(reply([Text(ENVELOPE)], 0)), Check)
    done = rounds.checked(None)
    assert isinstance(done, Done)
    assert done.response.message.parts == [Text("The table is clean.")]


def test_a_json_action_is_answered_as_json_text_and_no_envelope_as_it_came() -> None:
    rounds = Rounds(request(), ACTION_POLICY)
    rounds.first()
    rounds.replied(reply([Text('{"state_patch": {}, "action": {"rows": 3}}')], 0))
    done = rounds.checked(None)
    assert isinstance(done, Done) and done.response.message.parts == [Text('{"rows":3}')]
    rounds = Rounds(request(), Policy(check=True, answer_action=True))
    rounds.first()
    rounds.replied(reply([Text("no envelope")], 0))
    done = rounds.checked("reply with a JSON envelope")
    assert isinstance(done, Done) and done.response.message.parts == [Text("no envelope")]


def test_paper_streams_without_tools_hold_the_envelope_and_send_the_action() -> None:
    rounds = Rounds(request(stream=True), ACTION_POLICY)
    rounds.first()
    rounds.begin(Wire.CHAT)
    shown = [e for event in stream_events([Text(ENVELOPE)], 0) for e in rounds.view(event)]
    assert not any(isinstance(e, PartStart | Delta) for e in shown)
    assert isinstance(rounds.ended(), Check)
    done = rounds.checked(None)
    assert isinstance(done, Done)
    accumulator = Accumulator(Wire.CHAT)
    for event in [*shown, *rounds.closing()]:
        accumulator.add(event)
    assert accumulator.response().message.parts == [Text("The table is clean.")]


def test_paper_streams_with_a_client_call_stream_the_call_and_send_the_action_last() -> None:
    """The envelope stays upstream on every path: beside the client's own call, the text the
    client gets is the action, after the call's parts (which were not held)."""
    call = ToolCall("call_1", "shell", '{"cmd":"ls"}')
    rounds = Rounds(request(stream=True), ACTION_POLICY)
    rounds.first()
    rounds.begin(Wire.CHAT)
    shown = [e for event in stream_events([Text(ENVELOPE), call], 0) for e in rounds.view(event)]
    assert any(isinstance(e, PartStart) and isinstance(e.part, ToolCall) for e in shown)
    assert not any(isinstance(e, PartStart) and isinstance(e.part, Text) for e in shown)
    assert isinstance(rounds.ended(), Check)
    assert isinstance(rounds.checked(None), Done)
    accumulator = Accumulator(Wire.CHAT)
    for event in [*shown, *rounds.closing()]:
        accumulator.add(event)
    parts = accumulator.response().message.parts
    assert [type(p) for p in parts] == [ToolCall, Text]
    assert parts[1] == Text("The table is clean.")


def test_a_paper_stream_of_a_call_alone_ends_without_an_empty_text_part() -> None:
    """No envelope, no text: nothing is added after the call (an empty text block is refused
    by Anthropic when the client sends its history back)."""
    call = ToolCall("call_1", "shell", '{"cmd":"ls"}')
    rounds = Rounds(request(stream=True), ACTION_POLICY)
    rounds.first()
    rounds.begin(Wire.CHAT)
    shown = [e for event in stream_events([call], 0) for e in rounds.view(event)]
    assert isinstance(rounds.ended(), Check)
    assert isinstance(rounds.checked("reply with a JSON envelope"), Done)
    closing = rounds.closing()
    assert not any(isinstance(e, PartStart) for e in closing)
    accumulator = Accumulator(Wire.CHAT)
    for event in [*shown, *closing]:
        accumulator.add(event)
    assert [type(p) for p in accumulator.response().message.parts] == [ToolCall]


def test_a_round_without_usage_makes_the_replys_usage_unknown_and_is_kept_for_the_ledger() -> None:
    """Defect 7 of issue 25: a sum missing a part is not shown as the sum; the ledger gets
    the round's request and reply to count itself."""
    rounds = Rounds(request(), POLICY)
    first = rounds.first()
    assert isinstance(first, Send)
    answered = rounds.replied(reply([ToolCall("c0", "recall", "{}")], 0))
    assert isinstance(answered, Answer)
    second = rounds.answered([(answered.calls[0], "recalled")])
    assert isinstance(second, Send)
    unreported = reply([Text("done")], 1)
    unreported.usage = None
    done = rounds.replied(unreported)
    assert isinstance(done, Done) and done.response.usage is None
    known, unknown = rounds.metered
    assert (known.usage, known.sent, known.reply) == (ROUND_USAGE, None, None)
    assert unknown.usage is None and unknown.sent is second.request
    assert unknown.reply is not None and unknown.reply.parts == [Text("done")]


def test_a_stream_of_unknown_usage_ends_with_the_usage_its_wire_is_given() -> None:
    rounds = Rounds(request(stream=True))
    rounds.first()
    rounds.begin(Wire.CHAT)
    for event in [Start("r0", "m"), PartStart(0, Text("hi")), PartEnd(0), Finish(StopReason.END)]:
        rounds.view(event)
    assert isinstance(rounds.ended(), Done)
    assert rounds.closing()[-1] == Finish(StopReason.END, None)
    assert rounds.closing(Usage(input=9, output=1))[-1] == Finish(
        StopReason.END, Usage(input=9, output=1)
    )
