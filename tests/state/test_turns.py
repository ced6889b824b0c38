"""Turn segmentation: what one step of a conversation is, in every shape the wires produce."""

from __future__ import annotations

from pathlib import Path

from skillstate.conversation import (
    Image,
    Message,
    Opaque,
    Part,
    Reasoning,
    Request,
    Text,
    ToolCall,
    ToolResult,
    Wire,
)
from skillstate.economics.tokenizer import count_request
from skillstate.protocols import adapter
from skillstate.state.turns import message_tokens, segment
from skillstate.support.jsonio import loads


def user(text: str) -> Message:
    return Message("user", [Text(text)])


def system(text: str) -> Message:
    return Message("system", [Text(text)])


def calls(*ids: str, text: str = "") -> Message:
    parts: list[Part] = [Text(text)] if text else []
    parts += [ToolCall(i, "read_file", f'{{"path": "{i}.py"}}') for i in ids]
    return Message("assistant", parts)


def tool(call_id: str, output: str = "ok") -> Message:
    return Message("tool", [ToolResult(call_id, [Text(output)])])


def results_in_user(*ids: str, text: str = "") -> Message:
    parts: list[Part] = [ToolResult(i, [Text(f"out {i}")]) for i in ids]
    if text:
        parts.append(Text(text))
    return Message("user", parts)


def one(n: int) -> int:
    return 1


def spans(messages: list[Message]) -> list[tuple[int, int, str]]:
    return [(t.start, t.end, t.kind) for t in segment(messages, count=one)]


def test_each_user_message_and_each_plain_assistant_reply_is_a_turn() -> None:
    messages = [user("fix the bug"), Message("assistant", [Text("done")]), user("thanks")]
    turns = segment(messages, count=one)
    assert [(t.start, t.end, t.kind) for t in turns] == [
        (0, 1, "user"),
        (1, 2, "assistant"),
        (2, 3, "user"),
    ]
    assert [t.first_user for t in turns] == [True, False, False]
    assert [t.index for t in turns] == [0, 1, 2]


def test_a_parallel_batch_and_its_tool_messages_are_one_turn() -> None:
    messages = [user("go"), calls("a", "b", "c"), tool("a"), tool("b"), tool("c"), calls("d")]
    turns = segment(messages, count=one)
    assert [(t.start, t.end) for t in turns] == [(0, 1), (1, 5), (5, 6)]
    batch = turns[1]
    assert batch.calls == ("a", "b", "c")
    assert batch.results == ("a", "b", "c")
    assert not batch.open
    assert batch.span == range(1, 5)


def test_results_inside_a_user_message_belong_to_the_call_turn() -> None:
    messages = [
        user("go"),
        calls("a", "b"),
        results_in_user("a", "b", text="also check the tests"),
        calls("c"),
        results_in_user("c"),
    ]
    assert spans(messages) == [(0, 1, "user"), (1, 3, "assistant"), (3, 5, "assistant")]


def test_a_turn_reaches_its_last_result_across_messages_in_between() -> None:
    # Calls split over two assistant messages before their results: one step, uncuttable.
    messages = [user("go"), calls("a"), calls("b"), tool("a"), tool("b"), user("next")]
    turns = segment(messages, count=one)
    assert [(t.start, t.end) for t in turns] == [(0, 1), (1, 5), (5, 6)]
    assert turns[1].calls == ("a", "b")


def test_a_mid_conversation_instruction_belongs_to_the_turn_it_precedes() -> None:
    messages = [
        user("go"),
        calls("a"),
        tool("a"),
        system("be brief"),
        Message("developer", [Text("use tabs")]),
        calls("b"),
        tool("b"),
    ]
    assert spans(messages) == [(0, 1, "user"), (1, 3, "assistant"), (3, 7, "assistant")]


def test_an_instruction_inside_a_call_and_its_result_stays_in_that_turn() -> None:
    messages = [user("go"), calls("a"), system("note"), tool("a"), user("next")]
    assert spans(messages) == [(0, 1, "user"), (1, 4, "assistant"), (4, 5, "user")]


def test_leading_system_messages_join_the_first_user_turn() -> None:
    turns = segment([system("you are helpful"), user("hi")], count=one)
    assert [(t.start, t.end, t.kind, t.first_user) for t in turns] == [(0, 2, "user", True)]


def test_trailing_instructions_join_the_turn_they_follow() -> None:
    messages = [user("go"), Message("assistant", [Text("ok")]), system("wrap up")]
    assert spans(messages) == [(0, 1, "user"), (1, 3, "assistant")]
    turns = segment([*messages, Message("developer", [Text("and tabs")])], count=one)
    assert [(t.start, t.end, t.kind, t.tokens) for t in turns] == [
        (0, 1, "user", 1),
        (1, 4, "assistant", 3),
    ]


def test_a_trailing_instruction_keeps_the_calls_and_the_open_flag_of_its_turn() -> None:
    messages = [user("go"), calls("a", "b"), tool("a"), system("hurry")]
    last = segment(messages, count=one)[-1]
    assert (last.start, last.end, last.calls, last.results) == (1, 4, ("a", "b"), ("a",))
    assert last.open and last.pending == frozenset({"b"})


def test_a_conversation_of_instructions_only_is_one_instruction_turn() -> None:
    messages = [system("you are helpful"), Message("developer", [Text("be brief")])]
    assert spans(messages) == [(0, 2, "instruction")]


def test_a_call_waiting_for_its_result_makes_the_turn_open() -> None:
    messages = [user("go"), calls("a", "b"), tool("a")]
    turns = segment(messages, count=one)
    assert turns[-1].open
    assert turns[-1].pending == frozenset({"b"})
    assert not turns[0].open


def test_results_no_call_made_are_their_own_turn_at_the_start() -> None:
    messages = [tool("lost"), user("go")]
    assert spans(messages) == [(0, 1, "results"), (1, 2, "user")]


def test_orphan_results_after_a_turn_continue_it() -> None:
    messages = [user("go"), Message("assistant", [Text("hm")]), tool("lost"), user("next")]
    assert spans(messages) == [(0, 1, "user"), (1, 3, "assistant"), (3, 4, "user")]


def test_a_user_message_of_opaque_items_continues_the_turn_before_it() -> None:
    hosted_call = Message("assistant", [Opaque(Wire.RESPONSES, {"kind": "hosted call"})])
    hosted_output = Message("user", [Opaque(Wire.RESPONSES, {"kind": "hosted output"})])
    messages = [user("go"), hosted_call, hosted_output, user("next")]
    assert spans(messages) == [(0, 1, "user"), (1, 3, "assistant"), (3, 4, "user")]


def test_only_the_first_user_instruction_is_marked_first() -> None:
    messages = [
        Message("assistant", [Text("hello, what shall we do?")]),
        user("fix it"),
        calls("a"),
        results_in_user("a"),
        user("and the docs"),
    ]
    turns = segment(messages, count=one)
    assert [t.first_user for t in turns] == [False, True, False, False]


def test_an_empty_conversation_has_no_turns() -> None:
    assert segment([]) == []


def test_turn_tokens_add_up_their_messages() -> None:
    messages = [user("go"), calls("a", "b"), tool("a", "x" * 50), tool("b", "hello world")]
    turns = segment(messages)
    assert [t.tokens for t in turns] == [
        message_tokens(messages[0]),
        sum(message_tokens(m) for m in messages[1:]),
    ]


def test_message_tokens_agree_with_the_request_estimate() -> None:
    message = Message(
        "assistant",
        [
            Reasoning("let me think about the failing test"),
            Text("Reading both files."),
            ToolCall("c1", "read_file", '{"path": "src/app.py"}'),
            ToolResult("c0", [Text("def main():\n    return 1\n"), Image(url="http://x/y.png")]),
            ToolResult("c1", [Opaque(Wire.MESSAGES, {"type": "tool_reference", "tool_name": "x"})]),
            Opaque(Wire.RESPONSES, {"type": "item_reference", "id": "rs_1"}),
        ],
    )
    alone = Request(model="m", messages=[message], source=Wire.CHAT)
    assert message_tokens(message) == count_request(alone)


def test_equal_content_counts_the_same_and_different_content_differently() -> None:
    first = message_tokens(user("the quick brown fox jumps over the lazy dog"))
    again = message_tokens(user("the quick brown fox jumps over the lazy dog"))
    longer = message_tokens(user("the quick brown fox jumps over the lazy dog twice"))
    assert first == again
    assert longer > first


def test_an_opaque_item_of_a_result_counts_as_its_json() -> None:
    reference = {"type": "tool_reference", "tool_name": "mcp__github__create_issue"}
    held = Message("user", [ToolResult("c", [Opaque(Wire.MESSAGES, reference)])])
    loose = Message("user", [Opaque(Wire.MESSAGES, reference)])
    empty = Message("user", [ToolResult("c", [])])
    assert message_tokens(held) == message_tokens(loose) > message_tokens(empty)
    requests = [Request("m", [m], Wire.MESSAGES) for m in (held, loose, empty)]
    assert count_request(requests[0]) == count_request(requests[1]) > count_request(requests[2])


TOOL_SEARCH = (
    Path(__file__).parents[1] / "fixtures" / "handwritten" / "claude-code-tool-search.json"
)


def test_a_tool_search_result_answers_its_call() -> None:
    """Claude Code's ToolSearch result holds ``tool_reference`` blocks, not text: its call is
    answered all the same, so the turn is closed and collapse may cut after it."""
    request = adapter(Wire.MESSAGES).decode_request(loads(TOOL_SEARCH.read_bytes()))
    turns = segment(request.messages, count=one)
    assert [(t.start, t.end, t.kind, t.calls, t.results) for t in turns] == [
        (0, 1, "user", (), ()),
        (1, 3, "assistant", ("toolu_search1",), ("toolu_search1",)),
        (3, 5, "assistant", ("toolu_issue1",), ("toolu_issue1",)),
        (5, 7, "assistant", ("toolu_bash1",), ("toolu_bash1",)),
    ]
    assert not any(t.open for t in turns)


# Resuming a segmentation: a conversation that extends one segmented before ------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from skillstate.state import turns as turns_module  # noqa: E402


@st.composite
def growing(draw: st.DrawFn) -> tuple[list[Message], list[int]]:
    """A conversation of every shape segment knows, and the lengths a client sent it at."""
    messages: list[Message] = [user("task")]
    pending: list[str] = []
    for n in range(draw(st.integers(1, 30))):
        kinds = ["user", "system", "call", "calls", "result", "late", "x", "again"]
        kind = draw(st.sampled_from(kinds))
        if kind == "user":
            messages.append(user(f"note {n}"))
        elif kind == "system":
            messages.append(system(f"rule {n}"))
        elif kind in ("call", "calls"):
            ids = [f"c{n}", f"d{n}"] if kind == "calls" else [f"c{n}"]
            messages.append(calls(*ids))
            pending += ids
        elif kind == "result" and pending:
            messages.append(tool(pending.pop(0)))
        elif kind == "late" and pending:
            messages.append(results_in_user(pending.pop()))
        elif kind == "x":
            messages.append(tool(f"c{max(0, n - 3)}", "a result again"))
        elif kind == "again":  # an id made before, made again (some backends reuse ids)
            messages.append(calls(f"c{max(0, n - 3)}"))
            pending.append(f"c{max(0, n - 3)}")
    cuts = sorted(draw(st.lists(st.integers(1, len(messages)), max_size=6)))
    return messages, [*cuts, len(messages)]


@settings(max_examples=300, deadline=None)
@given(growing())
def test_a_resumed_segmentation_is_the_whole_one(case: tuple[list[Message], list[int]]) -> None:
    """The same message objects sent again, longer each time (a re-sent history): every
    segmentation equals segmenting the conversation whole, from nothing."""
    messages, cuts = case
    for cut in cuts:
        got = segment(messages[:cut])
        assert got == turns_module._segment(messages[:cut], message_tokens, [], 0), cut


def test_a_re_sent_history_is_segmented_from_its_last_turns_only() -> None:
    history = [user("task")]
    for n in range(50):
        history += [calls(f"c{n}"), tool(f"c{n}")]
    segment(history)
    kept, start = turns_module._resumed([*history, calls("new"), tool("new")])
    assert len(kept) == 49 and start == kept[-1].end == 97  # the last two turns read again
    copies = [Message(m.role, list(m.parts)) for m in history]  # equal, not the same objects
    assert turns_module._resumed(copies) == ([], 0)


def test_a_reused_call_id_answered_late_is_segmented_as_a_whole_conversation_would_be() -> None:
    """Some backends reuse call ids: a new result for ``c`` reaches back to the first turn
    that made ``c``, so a resumed segmentation must not keep that turn as it was."""
    history = [user("task"), calls("c"), tool("c")]
    for n in range(40):
        history += [calls(f"d{n}"), tool(f"d{n}")]
    history.append(calls("c"))  # the id again, its result still to come
    segment(history)
    later = [*history, tool("c"), user("go on")]
    assert segment(later) == turns_module._segment(later, message_tokens, [], 0)
