"""Hybrid mode's rendering: the Σ message, the tail note, and the outbound request of an epoch,
byte-stable from one request of the epoch to the next on every wire."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from skillstate.conversation import (
    CacheMark,
    Message,
    Opaque,
    Request,
    Text,
    Tool,
    ToolCall,
    ToolResult,
    Wire,
)
from skillstate.protocols import adapter
from skillstate.state.collapse import plan_collapse
from skillstate.state.diff import state_changes
from skillstate.state.options import CollapseOptions
from skillstate.state.render import (
    MAX_CACHE_BREAKPOINTS,
    SpanRef,
    render_hybrid,
    sigma_message,
    stale_nudge,
    state_json,
    tail_note,
)
from skillstate.state.schema import StateSchema
from skillstate.state.tools import (
    RECALL_TOOL,
    SKILL_STATE_TOOL,
    internal_names,
    recall_tool,
    skill_state_tool,
)
from skillstate.state.turns import segment
from skillstate.support import jsonio

RECORDED = Path(__file__).parents[1] / "fixtures" / "recorded"
EPHEMERAL = {"type": "ephemeral"}
"""A ``CacheMark()`` as the Anthropic wire writes it."""
FIXTURES = {
    Wire.CHAT: "openai-chat/opencode-tool-result.json",
    Wire.RESPONSES: "openai-responses/codex-function-call-output.json",
    Wire.MESSAGES: "anthropic-messages/claude-code-tool-result.json",
}
SCHEMA = StateSchema.from_keys(None)
FILES = {"src/parser.py": "read, edited", "tests/test_parser.py": "written"}
SNAPSHOT: dict[str, Any] = {
    "objective": "make the parser accept trailing commas",
    "files": FILES,
    "plan": {"tests": {"step": "run the tests", "status": "active"}},
    "step": 9,
}
SPAN = SpanRef("sha256:6f1c2e", 3, 40, 12, "read the parser, wrote a failing test")


def recorded(wire: Wire) -> Request:
    body = json.loads((RECORDED / FIXTURES[wire]).read_bytes())
    return adapter(wire).decode_request(body)


def step(wire: Wire, n: int) -> list[Message]:
    """One step of a tool loop in ``wire``'s shape: a shell call and its output."""
    call_id = f"call_{n}"
    call = ToolCall(call_id, _shell(wire), json.dumps({"command": f"grep -n item{n} src"}))
    result = ToolResult(call_id, [Text(f"src/parser.py:{n}: item{n} = parse({n})\n" * 20)])
    if wire is Wire.MESSAGES:
        return [Message("assistant", [call]), Message("user", [result])]
    return [Message("assistant", [call]), Message("tool", [result])]


def _shell(wire: Wire) -> str:
    return {Wire.CHAT: "bash", Wire.RESPONSES: "exec_command", Wire.MESSAGES: "Bash"}[wire]


def session(wire: Wire, steps: int) -> Request:
    """The recorded request of ``wire`` with ``steps`` more tool-loop steps appended."""
    request = recorded(wire)
    for n in range(steps):
        request.messages.extend(step(wire, n))
    return request


def offered(request: Request) -> list[Tool]:
    """The internal tools as the engine offers them beside ``request``'s own tools."""
    tools = {SKILL_STATE_TOOL: skill_state_tool(SCHEMA), RECALL_TOOL: recall_tool()}
    names = internal_names(tool.name for tool in request.tools)
    return [replace(tools[tool], name=name) for name, tool in names.items()]


def render(request: Request, plan_head: range, plan_tail_start: int, **kw: Any) -> Request:
    args: dict[str, Any] = {
        "snapshot": SNAPSHOT,
        "spans": [SPAN],
        "changes": {},
        "nudge": None,
        "schema": SCHEMA,
        "internal_tools": offered(request),
        "cache_markers": False,
    }
    args.update(kw)
    tail = range(plan_tail_start, len(request.messages))
    return render_hybrid(request, head=plan_head, tail=tail, **args)


def messages_key(wire: Wire) -> str:
    return "input" if wire is Wire.RESPONSES else "messages"


# The Σ message -----------------------------------------------------------------------------


def header(message: Message) -> str:
    text = message.parts[0]
    assert isinstance(text, Text)
    return text.text.split("```json", 1)[0]


def test_the_sigma_message_names_its_span_refs_and_tools_then_holds_sigma() -> None:
    message = sigma_message(SNAPSHOT, [SPAN], SCHEMA)
    assert message.role == "user"
    assert len(message.parts) == 1
    text = message.parts[0]
    assert isinstance(text, Text)
    top = header(message)
    for needle in ("skillstate", "messages 3-40", "12 turns", "sha256:6f1c2e", "recall"):
        assert needle in top
    assert "skill_state" in top and "Merge Patch" in top and "null" in top
    assert "read the parser" in top
    assert len(top) < 600
    body = text.text.split("```json\n", 1)[1].removesuffix("\n```")
    assert json.loads(body) == SNAPSHOT
    assert body == json.dumps(SNAPSHOT, sort_keys=True, separators=(",", ":"))


def test_the_sigma_message_is_the_same_bytes_whatever_the_key_order() -> None:
    reordered = dict(reversed(list(SNAPSHOT.items())))
    reordered["files"] = dict(reversed(list(FILES.items())))
    assert sigma_message(reordered, [SPAN], SCHEMA) == sigma_message(SNAPSHOT, [SPAN], SCHEMA)


def test_several_spans_are_each_named_and_long_summaries_are_cut() -> None:
    spans = [
        SpanRef("sha256:aaa", 3, 40, 12, "x" * 500),
        SpanRef("sha256:bbb", 41, 41, 1, "one\nline"),
    ]
    top = header(sigma_message({}, spans, SCHEMA))
    assert "sha256:aaa" in top and "sha256:bbb" in top
    assert "message 41 (1 turn: one line)" in top
    assert "x" * 101 not in top
    assert len(top) < 800


def test_the_header_lists_the_schema_keys_sigma_lacks() -> None:
    top = header(sigma_message({"objective": "x"}, [SPAN], SCHEMA))
    assert "Not set yet: plan, done, findings" in top
    assert "objective" not in top.split("Not set yet:")[1]


def test_state_json_keeps_integers_beyond_64_bits_exact() -> None:
    assert state_json({"b": 2**70, "a": 1}) == '{"a":1,"b":1180591620717411303424}'


# The tail note -----------------------------------------------------------------------------


def test_the_tail_note_holds_the_changes_and_the_nudge() -> None:
    changes = {"step": 10, "files": {"src/lexer.py": "read"}}
    note = tail_note(changes, nudge=stale_nudge(7))
    assert note is not None and note.role == "user"
    text = note.parts[0]
    assert isinstance(text, Text)
    assert state_json(changes) in text.text
    assert "Σ has not been updated for 7 steps: call skill_state" in text.text
    assert text.text.count("\n```json\n") == 1


def test_the_tail_note_has_either_part_alone_or_is_none() -> None:
    only_changes = tail_note({"step": 1}, nudge=None)
    only_nudge = tail_note({}, nudge="call skill_state\nsoon")
    assert only_changes is not None and only_nudge is not None
    assert "updated" not in str(only_changes.parts[0])
    assert "```" not in str(only_nudge.parts[0]) and "skill_state soon" in str(only_nudge.parts[0])
    assert tail_note({}, nudge=None) is None
    assert tail_note({}, nudge="") is None
    assert tail_note({}, nudge=" \n ") is None


def test_the_tail_note_shows_sigma_whole_when_there_is_no_sigma_message() -> None:
    note = tail_note({}, nudge=stale_nudge(6), state=SNAPSHOT)
    assert note is not None and note.role == "user"
    text = note.parts[0]
    assert isinstance(text, Text)
    assert text.text.startswith("[skillstate] The session state Σ so far")
    body = text.text.split("```json\n", 1)[1].split("\n```", 1)[0]
    assert body == state_json(SNAPSHOT)
    assert "changes" not in text.text
    assert text.text.endswith(stale_nudge(6))
    assert len(text.text) < len(state_json(SNAPSHOT)) + 250


def test_an_empty_sigma_needs_no_note() -> None:
    assert tail_note({}, nudge=None, state={}) is None
    assert tail_note({}, nudge=None, state={"step": 4}) is None
    assert tail_note({}, nudge=None, state={"step": 4, "open": {}}) is not None
    only_nudge = tail_note({}, nudge=stale_nudge(6), state={})
    assert only_nudge == tail_note({}, nudge=stale_nudge(6))


# The request -------------------------------------------------------------------------------


def conversation() -> Request:
    messages = [Message("user", [Text("fix the parser")])]
    for n in range(8):
        messages.extend(step(Wire.CHAT, n))
    tools = [Tool("bash", "run", {"type": "object"}), Tool("recall", "client's own")]
    return Request("m", messages, Wire.CHAT, [Text("system prompt")], tools)


def test_collapsed_messages_are_replaced_by_the_sigma_message() -> None:
    request = conversation()
    out = render(request, range(1), 13, changes={"step": 10})
    sigma = sigma_message(SNAPSHOT, [SPAN], SCHEMA, ("skill_state", "skillstate_recall"))
    assert out.messages[0] is request.messages[0]
    assert out.messages[1] == sigma
    assert all(a is b for a, b in zip(out.messages[2:-1], request.messages[13:], strict=True))
    assert out.messages[-1] == tail_note({"step": 10}, nudge=None)
    assert out.system == request.system


def test_internal_tools_follow_the_clients_and_never_take_a_clients_name() -> None:
    request = conversation()  # its tools are bash and a recall of the client's own
    out = render(request, range(1), 13)
    assert [t.name for t in out.tools] == ["bash", "recall", "skill_state", "skillstate_recall"]
    assert out.tools[1] is request.tools[1]  # the client's recall, kept as it came


def test_the_input_request_is_not_mutated() -> None:
    request = session(Wire.MESSAGES, 10)
    before = copy.deepcopy(request)
    render(request, range(2), 14, changes={"step": 3}, nudge="n", cache_markers=True)
    assert request == before


def test_without_spans_or_note_the_messages_are_the_clients_own() -> None:
    request = conversation()
    out = render(request, range(1), 1, spans=[], snapshot={})
    assert len(out.messages) == len(request.messages)
    assert all(a is b for a, b in zip(out.messages, request.messages, strict=True))
    assert out.messages is not request.messages


def test_without_spans_the_note_shows_sigma_whole_after_the_tool_results() -> None:
    request = conversation()
    out = render(request, range(1), 1, spans=[], nudge=stale_nudge(6))
    assert out.messages[:-1] == request.messages
    assert out.messages[-1] == tail_note({}, nudge=stale_nudge(6), state=SNAPSHOT)
    text = str(out.messages[-1].parts[0])
    assert state_json(SNAPSHOT) in text and "skill_state" in text


def test_the_sigma_note_names_skill_state_as_offered() -> None:
    tools = [
        replace(skill_state_tool(SCHEMA), name="skillstate_skill_state"),
        replace(recall_tool(), name="skillstate_recall"),
    ]
    out = render(conversation(), range(1), 1, spans=[], internal_tools=tools)
    assert "`skillstate_skill_state`" in str(out.messages[-1].parts[0])


def test_without_spans_there_are_no_changes_to_show() -> None:
    with pytest.raises(ValueError, match="Σ message to apply to"):
        render(conversation(), range(1), 1, spans=[], changes={"step": 1})


def test_no_note_after_an_assistant_message_or_while_a_call_waits() -> None:
    request = conversation()
    request.messages.append(Message("assistant", [Text("done")]))
    assert render(request, range(1), 13, changes={"step": 1}).messages[-1].role == "assistant"
    parallel = conversation()
    calls = [ToolCall("p1", "bash", "{}"), ToolCall("p2", "bash", "{}")]
    parallel.messages += [
        Message("assistant", calls),
        Message("tool", [ToolResult("p1", [Text("one")])]),
    ]
    out = render(parallel, range(1), 13, changes={"step": 1})
    assert out.messages[-1] is parallel.messages[-1]
    parallel.messages.append(Message("tool", [ToolResult("p2", [Text("two")])]))
    assert render(parallel, range(1), 13, changes={"step": 1}).messages[-1].role == "user"


def test_a_note_follows_a_user_message() -> None:
    request = conversation()
    request.messages.append(Message("user", [Text("also handle tabs")]))
    out = render(request, range(1), 13, nudge=stale_nudge(6))
    assert out.messages[-2] is request.messages[-1]
    assert out.messages[-1] == tail_note({}, nudge=stale_nudge(6))


@pytest.mark.parametrize(("head", "tail_start"), [(range(1, 2), 2), (range(5), 3)])
def test_ranges_that_do_not_split_the_conversation_are_refused(
    head: range, tail_start: int
) -> None:
    with pytest.raises(ValueError, match="do not split"):
        render(conversation(), head, tail_start)


def test_messages_left_out_without_a_span_are_refused() -> None:
    with pytest.raises(ValueError, match="no span"):
        render(conversation(), range(1), 13, spans=[])


# Byte stability within an epoch -------------------------------------------------------------


def epoch_renders(
    wire: Wire, cache_markers: bool = False, mark_newest: bool = False
) -> tuple[Any, Any, int]:
    """Two requests of one epoch: the boundary request and one three steps later, each with
    its own Σ changes; returns both encoded bodies and the Σ message's index. ``mark_newest``
    puts a client marker on the newest tool result, as Claude Code does."""
    first = session(wire, 16)
    plan = plan_collapse(segment(first.messages), CollapseOptions())
    assert plan is not None
    later = session(wire, 19)
    for request in (first, later):
        newest = request.messages[-1].parts[-1]
        if mark_newest and isinstance(newest, ToolResult):
            newest.cache = CacheMark()
    sigma_at = plan.head.stop
    bodies = []
    for request, step_no in ((first, 17), (later, 20)):
        current = {**SNAPSHOT, "step": step_no}
        out = render(
            request,
            plan.head,
            plan.tail.start,
            changes=state_changes(SNAPSHOT, current),
            nudge=stale_nudge(step_no - 9),
            cache_markers=cache_markers,
        )
        bodies.append(adapter(wire).encode_request(out))
    return bodies[0], bodies[1], sigma_at


@pytest.mark.parametrize("wire", list(Wire))
def test_requests_of_one_epoch_share_a_byte_identical_prefix(wire: Wire) -> None:
    first, later, _ = epoch_renders(wire)
    key = messages_key(wire)
    assert {k: v for k, v in first.items() if k != key} == {
        k: v for k, v in later.items() if k != key
    }
    items, more = first[key], later[key]
    assert len(more) == len(items) + 6
    stable = jsonio.dumps(items[:-1])[:-1]
    assert jsonio.dumps(more).startswith(stable)
    assert jsonio.dumps(items[-1]) != jsonio.dumps(more[-1])
    assert "skillstate" in jsonio.dumps_str(items[-1])


@pytest.mark.parametrize("wire", list(Wire))
def test_rendering_twice_gives_the_same_bytes(wire: Wire) -> None:
    once, _, _ = epoch_renders(wire)
    again, _, _ = epoch_renders(wire)
    assert jsonio.dumps(once) == jsonio.dumps(again)


@pytest.mark.parametrize("wire", list(Wire))
def test_before_the_first_boundary_sigma_is_shown_at_the_tail_and_the_prefix_is_stable(
    wire: Wire,
) -> None:
    bodies = []
    for steps, step_no in ((3, 4), (5, 6)):
        request = session(wire, steps)
        n = len(request.messages)
        current = {**SNAPSHOT, "step": step_no}
        out = render(request, range(n), n, spans=[], snapshot=current)
        assert out.messages[:-1] == request.messages
        assert state_json(current) in str(out.messages[-1].parts[0])
        bodies.append(adapter(wire).encode_request(out))
    key = messages_key(wire)
    items, more = bodies[0][key], bodies[1][key]
    assert jsonio.dumps(more).startswith(jsonio.dumps(items[:-1])[:-1])
    assert '"step\\":4' in jsonio.dumps_str(items[-1])
    assert '"step\\":6' in jsonio.dumps_str(more[-1])


# Cache breakpoints -------------------------------------------------------------------------


def count_markers(body: Any) -> int:
    return jsonio.dumps_str(body).count('"cache_control"')


def test_on_anthropic_the_sigma_message_carries_a_breakpoint_within_the_limit() -> None:
    plain, _, _ = epoch_renders(Wire.MESSAGES, mark_newest=True)
    first, _, sigma_at = epoch_renders(Wire.MESSAGES, cache_markers=True, mark_newest=True)
    sigma_block = first["messages"][sigma_at]["content"][0]
    assert sigma_block["cache_control"] == EPHEMERAL
    assert count_markers(plain) == MAX_CACHE_BREAKPOINTS - 1
    assert count_markers(first) == MAX_CACHE_BREAKPOINTS
    assert first["messages"][-2]["content"][0]["cache_control"] == EPHEMERAL


def marked(n_system: int, n_tools: int, n_parts: int, *, collapsed: int = 0) -> Request:
    """A request with client markers: ``n_parts`` on message parts of the tail, ``collapsed``
    on messages that collapse (messages 1 to 12)."""
    request = conversation()
    request.system = [Text(f"s{i}", cache=CacheMark()) for i in range(n_system)]
    request.tools = [Tool(f"t{i}", cache=CacheMark()) for i in range(n_tools)]
    for i in range(collapsed):
        call = request.messages[1 + 2 * i].parts[0]
        assert isinstance(call, ToolCall)
        call.cache = CacheMark()
    for i in range(n_parts):
        result = request.messages[-1 - 2 * i].parts[0]
        assert isinstance(result, ToolResult)
        if i % 2:
            result.content[0].cache = CacheMark()
        else:
            result.cache = CacheMark()
    return request


def markers(request: Request) -> list[str]:
    found = [f"system {i}" for i, t in enumerate(request.system) if t.cache]
    found += [f"tool {t.name}" for t in request.tools if t.cache]
    for i, message in enumerate(request.messages):
        for part in message.parts:
            if getattr(part, "cache", None):
                found.append(f"message {i}")
            if isinstance(part, ToolResult):
                found += [
                    f"message {i} content" for item in part.content if getattr(item, "cache", None)
                ]
    return found


def test_the_breakpoint_is_added_when_there_is_room() -> None:
    out = render(marked(2, 0, 1), range(1), 13, cache_markers=True)
    assert markers(out) == ["system 0", "system 1", "message 1", "message 5"]
    sigma = out.messages[1].parts[0]
    assert isinstance(sigma, Text) and sigma.cache == CacheMark()  # the provider's default


def test_the_earliest_tool_or_system_marker_gives_way_when_another_covers_it() -> None:
    """Four client markers, two on tools and system: the tool's goes (the system one after it
    caches the same prefix and more), the newest message keeps its own."""
    request = marked(1, 1, 2)
    before = markers(render(request, range(1), 13, cache_markers=False))
    assert before == ["system 0", "tool t0", "message 3 content", "message 5"]
    out = render(request, range(1), 13, cache_markers=True)
    assert markers(out) == ["system 0", "message 1", "message 3 content", "message 5"]
    assert markers(request) == ["system 0", "tool t0", "message 14 content", "message 16"]


def test_four_markers_on_tools_and_system_leave_the_latest_three_and_sigmas() -> None:
    out = render(marked(2, 2, 0), range(1), 13, cache_markers=True)
    assert markers(out) == ["system 0", "system 1", "tool t1", "message 1"]


def test_a_client_marker_after_sigma_already_covers_it_and_none_is_added() -> None:
    """One marker on tools and system and three in the tail: the tail's cache the prefix up
    to Σ, so the gateway adds nothing and the request keeps the client's four."""
    request = marked(1, 0, 2)
    call = request.messages[13].parts[0]
    assert isinstance(call, ToolCall)
    call.cache = CacheMark()
    out = render(request, range(1), 13, cache_markers=True)
    assert markers(out) == ["system 0", "message 2", "message 3 content", "message 5"]
    assert out.messages[2:6] == request.messages[13:]


def test_with_every_marker_before_sigma_the_earliest_message_one_gives_way() -> None:
    """Three markers on head messages and one on the system prompt: the earliest head marker
    goes (the later ones cache its prefix); an opaque item before it (a Claude Code
    ``tool_reference``) is the wire's JSON and is left exactly as it is."""
    request = marked(1, 0, 0)
    result = request.messages[2].parts[0]
    assert isinstance(result, ToolResult)
    result.content[0].cache = CacheMark()
    reference = Opaque(Wire.MESSAGES, {"type": "tool_reference", "tool_name": "mcp__x__y"})
    result.content.insert(0, reference)
    for i in (3, 4):
        part = request.messages[i].parts[0]
        assert isinstance(part, ToolCall | ToolResult)
        part.cache = CacheMark()
    out = render(request, range(5), 13, cache_markers=True)
    assert markers(out) == ["system 0", "message 3", "message 4", "message 5"]
    changed = out.messages[2].parts[0]
    assert isinstance(changed, ToolResult) and changed.content[0] is reference
    assert changed.content[1] == replace(result.content[1], cache=None)
    assert result.content[1].cache is not None  # the client's request is left as it was


def test_markers_on_collapsed_messages_do_not_count() -> None:
    out = render(marked(2, 0, 1, collapsed=3), range(1), 13, cache_markers=True)
    assert markers(out) == ["system 0", "system 1", "message 1", "message 5"]


def test_without_cache_markers_no_breakpoint_is_added() -> None:
    out = render(marked(0, 0, 0), range(1), 13, cache_markers=False)
    assert markers(out) == []


KEY = "sk-" + "R" * 40  # built from pieces: no key-shaped literal in the repository


def test_a_secret_in_the_state_is_never_rendered() -> None:
    """The model (or the seed) may copy a key from a tool output into Σ: every rendering of
    Σ shows a marker in its place, the same on every request; the stored Σ is not changed."""
    from skillstate.state.handover import handover_request
    from skillstate.state.render import shown_state, sigma_message, tail_note

    state = {"notes": {"env": f"export OPENAI_API_KEY={KEY}"}, "step": 3}
    schema = StateSchema.from_keys(None)
    sigma = sigma_message(state, [], schema).parts[0].text  # type: ignore[union-attr]
    tail = tail_note({}, nudge=None, state=state)
    assert tail is not None
    changes = tail_note({"notes": {"token": KEY}}, nudge=None)
    assert changes is not None
    asked = Request("m", [Message("user", [Text("Go on.")])], Wire.CHAT)
    handover = jsonio.dumps_str(adapter(Wire.CHAT).encode_request(
        handover_request(asked, state, schema)))  # fmt: skip
    from skillstate.state.paper import render_paper

    paper = render_paper(asked, procedure=[], state=state, schema=schema, task="Go on.")
    shown_paper = jsonio.dumps_str(adapter(Wire.CHAT).encode_request(paper))
    texts = [sigma, tail.parts[0].text, changes.parts[0].text, handover, shown_paper]  # type: ignore[union-attr]
    for text in texts:
        assert KEY not in text and "[redacted:" in text
    assert shown_state(state) == shown_state(state)
    assert state["notes"]["env"].endswith(KEY)  # type: ignore[index]
