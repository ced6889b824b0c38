"""``newest_output_chars`` reads, from a raw body of any wire, the longest tool output the
client added since the model's newest reply: what the decoded request says it is."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from skillstate.conversation import Message, Request, Text, Tool, ToolCall, ToolResult, Wire
from skillstate.protocols import adapter
from skillstate.protocols.signals import newest_output_chars


def _turn(n: int, lengths: list[int]) -> list[Message]:
    calls = [ToolCall(f"c{n}_{k}", "run", "{}") for k in range(len(lengths))]
    results = [ToolResult(f"c{n}_{k}", [Text("y" * size)]) for k, size in enumerate(lengths)]
    return [Message("assistant", list(calls)), Message("user", list(results))]


def _expected(request: Request) -> int:
    messages = request.messages
    replied = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    return max(
        (
            sum(len(t.text) for t in part.content if isinstance(t, Text))
            for message in messages[replied + 1 :]
            for part in message.parts
            if isinstance(part, ToolResult)
        ),
        default=0,
    )


@settings(max_examples=60, deadline=None)
@given(
    wire=st.sampled_from(list(Wire)),
    turns=st.lists(st.lists(st.integers(1, 3_000), min_size=1, max_size=3), max_size=4),
    asked=st.booleans(),
)
def test_the_newest_outputs_read_from_the_body_as_decoded(
    wire: Wire, turns: list[list[int]], asked: bool
) -> None:
    messages = [Message("user", [Text("Go.")])]
    for n, lengths in enumerate(turns):
        messages += _turn(n, lengths)
    if asked:
        messages.append(Message("user", [Text("And now?")]))
    request = Request(model="m", messages=messages, source=wire, tools=[Tool("run", "Run.", {})])
    body = adapter(wire).encode_request(request)
    decoded = adapter(wire).decode_request(body)
    assert newest_output_chars(wire, body) == _expected(decoded)
    if turns and not asked:
        assert newest_output_chars(wire, body) == max(turns[-1])


def test_a_body_without_a_list_has_none() -> None:
    for wire in Wire:
        assert newest_output_chars(wire, {"model": "m"}) == 0
    assert newest_output_chars(Wire.RESPONSES, {"input": "just text"}) == 0
