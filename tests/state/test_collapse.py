"""The collapse planner keeps DESIGN.md's invariants on every conversation shape: tool pairs
(parallel batches, results in tool messages or inside user messages) are never split, cuts
fall between turns, the first user instruction stays, and an open call is never collapsed."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillstate.conversation import Message, Part, Text, ToolCall, ToolResult
from skillstate.state.collapse import CollapsePlan, cut_points, plan_collapse
from skillstate.state.options import CollapseOptions
from skillstate.state.turns import Turn, segment

# Builders ---------------------------------------------------------------------------------


def user(text: str = "do it") -> Message:
    return Message("user", [Text(text)])


def calls(*ids: str) -> Message:
    return Message("assistant", [ToolCall(i, "run", "{}") for i in ids])


def tool(call_id: str) -> Message:
    return Message("tool", [ToolResult(call_id, [Text(f"output of {call_id}")])])


def step(call_id: str) -> list[Message]:
    return [calls(call_id), tool(call_id)]


def one(message: Message) -> int:
    return 1


def turns_of(messages: list[Message]) -> list[Turn]:
    return segment(messages, count=one)


def tool_loop(steps: int, prefix: str = "c") -> list[Message]:
    """One user instruction, then ``steps`` tool-call steps: the shape collapse exists for."""
    messages = [user("refactor the parser")]
    for i in range(steps):
        messages += step(f"{prefix}{i}")
    return messages


OPTIONS = CollapseOptions(min_turns=4, keep_recent_turns=2)


# Generated conversations ------------------------------------------------------------------


@dataclass
class Conversation:
    """A generated conversation and, as its generator built it, where each turn starts."""

    messages: list[Message]
    starts: list[int]
    open_tail: bool


@st.composite
def conversations(draw: st.DrawFn) -> Conversation:
    """Conversations as agent hosts send them: parallel batches, results as tool messages or
    inside a user message, calls spread over two assistant messages, instructions in the
    middle (before a step, or between a call and its results), and possibly a batch at the
    tail still waiting for some of its results."""
    counter = iter(range(10**6))
    steps: list[list[Message]] = [[user("the task")]]
    if draw(st.booleans()):
        steps[0].insert(0, Message("system", [Text("you are an agent")]))
    for _ in range(draw(st.integers(0, 14))):
        note = [_note(draw)] if draw(st.integers(0, 4)) == 0 else []
        steps.append(note + draw(_steps(counter)))
    open_tail = draw(st.booleans())
    if open_tail:
        ids = [f"open{next(counter)}" for _ in range(draw(st.integers(1, 3)))]
        answered = draw(st.lists(st.sampled_from(ids), unique=True, max_size=len(ids) - 1))
        steps.append([calls(*ids), *(tool(i) for i in answered)])
    messages = [m for s in steps for m in s]
    starts = [sum(len(s) for s in steps[:i]) for i in range(len(steps))]
    return Conversation(messages, starts, open_tail)


def _note(draw: st.DrawFn) -> Message:
    return Message(draw(st.sampled_from(["system", "developer"])), [Text("a note")])


def _steps(counter: Iterator[int]) -> st.SearchStrategy[list[Message]]:
    @st.composite
    def one_step(draw: st.DrawFn) -> list[Message]:
        kind = draw(st.sampled_from(["user", "text", "batch", "batch", "batch"]))
        if kind == "user":
            return [user("more")]
        if kind == "text":
            return [Message("assistant", [Text("thinking aloud")])]
        ids = [f"c{next(counter)}" for _ in range(draw(st.integers(1, 4)))]
        return _batch(draw, ids)

    return one_step()


def _batch(draw: st.DrawFn, ids: list[str]) -> list[Message]:
    split = draw(st.integers(0, len(ids) - 1)) if len(ids) > 1 and draw(st.booleans()) else 0
    messages = [calls(*ids[:split]), calls(*ids[split:])] if split else [calls(*ids)]
    if draw(st.integers(0, 5)) == 0:
        messages.append(_note(draw))
    order = draw(st.permutations(ids))
    if draw(st.booleans()):
        messages += [tool(i) for i in order]
    else:
        parts: list[Part] = [ToolResult(i, [Text(f"out {i}")]) for i in order]
        if draw(st.booleans()):
            parts.append(Text("a note from the user"))
        messages.append(Message("user", parts))
    return messages


def _ids(messages: list[Message]) -> tuple[set[str], set[str]]:
    made = {p.id for m in messages for p in m.parts if isinstance(p, ToolCall)}
    answered = {p.call_id for m in messages for p in m.parts if isinstance(p, ToolResult)}
    return made, answered


def _is_result_carrier(message: Message) -> bool:
    return message.role == "tool" or any(isinstance(p, ToolResult) for p in message.parts)


options_strategy = st.builds(
    CollapseOptions,
    min_turns=st.integers(0, 12),
    keep_recent_turns=st.integers(1, 6),
    protect_first_user_message=st.booleans(),
)


# Properties -------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(conversations())
def test_turns_are_the_steps_the_conversation_was_made_of(conversation: Conversation) -> None:
    turns = turns_of(conversation.messages)
    assert [t.start for t in turns] == conversation.starts
    assert turns[-1].end == len(conversation.messages)
    assert [t.open for t in turns] == [False] * (len(turns) - 1) + [conversation.open_tail]
    assert [t.first_user for t in turns] == [True] + [False] * (len(turns) - 1)


@settings(max_examples=300, deadline=None)
@given(conversations(), options_strategy, st.booleans())
def test_a_plan_keeps_every_invariant(
    conversation: Conversation, options: CollapseOptions, force: bool
) -> None:
    messages = conversation.messages
    plan = plan_collapse(turns_of(messages), options, force=force)
    if plan is None:
        return
    head, collapsed, tail = plan.split(messages)
    assert head + collapsed + tail == messages
    assert collapsed, "a plan always collapses something"
    starts = conversation.starts
    assert plan.collapsed.start in starts and plan.tail.start in starts, "cut inside a turn"

    made, answered = _ids(head + tail)
    everywhere_made, everywhere_answered = _ids(messages)
    assert (made & everywhere_answered) <= answered, "a kept call lost its result"
    assert (answered & everywhere_made) <= made, "a kept result lost its call"
    gone_made, gone_answered = _ids(collapsed)
    assert gone_made == gone_answered, "a collapsed call without its result, or the reverse"

    assert not _is_result_carrier(tail[0]), "the tail starts with an orphan result"
    assert len(starts) - starts.index(plan.tail.start) >= options.keep_recent_turns
    if conversation.open_tail:
        assert plan.tail.start <= starts[-1], "the open call at the tail was collapsed"
    if options.protect_first_user_message:
        assert starts[1] <= plan.head.stop, "the first user instruction was collapsed"


@settings(max_examples=150, deadline=None)
@given(conversations(), st.integers(1, 6))
def test_everything_older_than_the_recent_turns_is_collapsed(
    conversation: Conversation, keep: int
) -> None:
    messages, starts = conversation.messages, conversation.starts
    plan = plan_collapse(turns_of(messages), CollapseOptions(min_turns=0, keep_recent_turns=keep))
    lead = _leading_user_turns(conversation)
    if len(starts) - keep <= lead:
        assert plan is None
        return
    assert plan is not None
    assert plan.head == range(starts[lead])
    assert plan.tail == range(starts[-keep], len(messages))


def _leading_user_turns(conversation: Conversation) -> int:
    """How many turns open the conversation with the user's words alone, before any answer:
    the first instruction the planner keeps."""
    messages, starts = conversation.messages, conversation.starts
    lead = 1
    for start in starts[1:]:
        first = next(m for m in messages[start:] if m.role not in ("system", "developer"))
        if first.role != "user" or not all(isinstance(p, Text) for p in first.parts):
            break
        lead += 1
    return lead


def test_the_instruction_split_over_several_user_messages_stays_whole() -> None:
    # Codex sends its environment context and the task as two user messages.
    messages = [user("<environment_context>"), *tool_loop(10)]
    plan = plan_collapse(turns_of(messages), OPTIONS)
    assert plan is not None
    assert plan.head == range(2)
    assert plan.collapsed.start == 2


# Examples ---------------------------------------------------------------------------------


def test_collapse_cuts_between_the_steps_of_one_tool_loop() -> None:
    messages = tool_loop(10)
    plan = plan_collapse(turns_of(messages), OPTIONS)
    assert plan == CollapsePlan(
        head=range(1),
        collapsed=range(1, 17),
        tail=range(17, 21),
        turns=tuple(turns_of(messages)[1:9]),
    )
    assert plan.kept == (range(1), range(17, 21))


def test_collapsed_tokens_are_the_collapsed_turns_tokens() -> None:
    messages = tool_loop(6)
    turns = segment(messages)
    plan = plan_collapse(turns, OPTIONS)
    assert plan is not None
    assert plan.collapsed_tokens == sum(t.tokens for t in turns[1:5]) > 0


def test_an_open_call_at_the_tail_is_kept_even_when_nothing_else_is() -> None:
    messages = [*tool_loop(6), calls("late")]
    turns = turns_of(messages)
    plan = plan_collapse(turns, CollapseOptions(min_turns=0, keep_recent_turns=1))
    assert plan is not None
    assert plan.tail == range(turns[-1].start, len(messages))
    assert turns[-1].open


def test_the_newest_turn_is_kept_even_when_options_ask_to_keep_none() -> None:
    messages = [*tool_loop(6), calls("late")]
    turns = turns_of(messages)
    plan = plan_collapse(turns, CollapseOptions(min_turns=0, keep_recent_turns=0))
    assert plan is not None
    assert plan.tail == range(turns[-1].start, len(messages))


def test_a_call_left_unanswered_mid_conversation_holds_every_later_cut_back() -> None:
    messages = [*tool_loop(3), calls("dropped"), user("never mind"), *tool_loop(5, "d")[1:]]
    turns = turns_of(messages)
    assert [t.open for t in turns].index(True) == 4
    plan = plan_collapse(turns, OPTIONS)
    assert plan is not None
    assert plan.tail.start == turns[4].start == 7
    assert [t.index for t in plan.turns] == [1, 2, 3]


@pytest.mark.parametrize("role", ["system", "developer"])
def test_a_trailing_instruction_does_not_take_the_place_of_a_kept_turn(role: str) -> None:
    messages = tool_loop(6)
    options = CollapseOptions(min_turns=0, keep_recent_turns=2)
    without = plan_collapse(turns_of(messages), options)
    plan = plan_collapse(turns_of([*messages, Message(role, [Text("wrap up soon")])]), options)
    assert without is not None and plan is not None
    # The last two steps (messages 9-12) stay verbatim, and the instruction with them.
    assert (plan.head, plan.collapsed, plan.turns) == (
        without.head,
        without.collapsed,
        without.turns,
    )
    assert (without.tail, plan.tail) == (range(9, 13), range(9, 14))


def test_a_trailing_instruction_does_not_count_towards_min_turns() -> None:
    messages = [*tool_loop(3), Message("system", [Text("note")])]
    options = CollapseOptions(min_turns=5, keep_recent_turns=1)
    assert plan_collapse(turns_of(messages), options) is None


def test_fewer_turns_than_min_turns_are_left_alone_unless_forced() -> None:
    turns = turns_of(tool_loop(3))
    options = CollapseOptions(min_turns=5, keep_recent_turns=1)
    assert plan_collapse(turns, options) is None
    forced = plan_collapse(turns, options, force=True)
    assert forced is not None
    assert forced.collapsed == range(1, 5)


def test_disabled_collapse_plans_nothing_even_when_forced() -> None:
    turns = turns_of(tool_loop(10))
    off = CollapseOptions(enabled=False, min_turns=0, keep_recent_turns=1)
    assert plan_collapse(turns, off, force=True) is None


def test_subagent_sessions_are_left_alone_unless_allowed() -> None:
    turns = turns_of(tool_loop(10))
    assert plan_collapse(turns, OPTIONS, subagent=True) is None
    allowed = CollapseOptions(min_turns=4, keep_recent_turns=2, allow_subagent_sessions=True)
    assert plan_collapse(turns, allowed, subagent=True) == plan_collapse(turns, OPTIONS)


def test_the_first_user_instruction_may_be_collapsed_when_not_protected() -> None:
    turns = turns_of(tool_loop(10))
    options = CollapseOptions(min_turns=4, keep_recent_turns=2, protect_first_user_message=False)
    plan = plan_collapse(turns, options)
    assert plan is not None
    assert plan.head == range(0)
    assert plan.collapsed.start == 0


def test_nothing_to_collapse_between_the_head_and_the_recent_turns() -> None:
    turns = turns_of(tool_loop(2))
    assert plan_collapse(turns, CollapseOptions(min_turns=0, keep_recent_turns=2)) is None
    assert plan_collapse([], CollapseOptions(min_turns=0), force=True) is None


def test_a_call_id_seen_on_both_sides_of_a_boundary_blocks_it() -> None:
    # A result before its call (a pre-trimmed history): no cut may separate the two.
    messages = [user("go"), tool("x"), user("again"), calls("x"), tool("x"), *step("y")]
    turns = turns_of(messages)
    assert [(t.start, t.end) for t in turns] == [(0, 2), (2, 3), (3, 5), (5, 7)]
    assert cut_points(turns) == [True, False, False, True, True]


def test_no_cut_lands_just_before_a_turn_of_orphan_results() -> None:
    messages = [user("go"), *step("a"), Message("system", [Text("n")]), tool("lost"), *step("b")]
    turns = turns_of(messages)
    assert [t.kind for t in turns] == ["user", "assistant", "results", "assistant"]
    assert cut_points(turns) == [True, True, False, True, True]


def test_split_refuses_messages_the_plan_was_not_made_for() -> None:
    messages = tool_loop(10)
    plan = plan_collapse(turns_of(messages), OPTIONS)
    assert plan is not None
    with pytest.raises(ValueError, match="plan covers 21 messages, got 20"):
        plan.split(messages[:-1])
