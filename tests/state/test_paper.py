"""Paper mode: A_t = (P, Σ_t, O_t), with a task slot for instructions given mid-loop, and a
request size that does not grow with the session."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest

from skillstate.conversation import (
    Message,
    Part,
    Reasoning,
    Request,
    Text,
    Tool,
    ToolCall,
    ToolResult,
    Wire,
)
from skillstate.protocols import adapter
from skillstate.state.envelope import ENVELOPE_SHAPE
from skillstate.state.paper import (
    PAPER_PROTOCOL,
    STATE_HEADING,
    TASK_HEADING,
    newest_instruction,
    observe,
    procedure_of,
    render_paper,
    result_batch,
)
from skillstate.state.render import state_json
from skillstate.state.schema import StateSchema
from skillstate.support import jsonio

RECORDED = Path(__file__).parents[1] / "fixtures" / "recorded"
SCHEMA = StateSchema.from_keys(None)
P = [Text("You are a careful data-cleaning agent. Work one step at a time.")]
TOOLS = [Tool("run", "run a step", {"type": "object", "properties": {}})]


def user(text: str) -> Message:
    return Message("user", [Text(text)])


def calls(*ids: str, text: str = "") -> Message:
    parts: list[Part] = [Text(text)] if text else []
    parts += [ToolCall(i, "run", json.dumps({"step": i})) for i in ids]
    return Message("assistant", parts)


def result(call_id: str, output: str = "ok", *, wire: Wire = Wire.CHAT) -> Message:
    part = ToolResult(call_id, [Text(output)])
    return Message("user" if wire is Wire.MESSAGES else "tool", [part])


def request(*messages: Message, wire: Wire = Wire.CHAT) -> Request:
    return Request("m", list(messages), wire, [Text("the client's system prompt")], list(TOOLS))


def paper(req: Request, state: dict[str, object] | None = None, task: str | None = None) -> Request:
    return render_paper(req, procedure=P, state=state or {"step": 1}, schema=SCHEMA, task=task)


def slot_text(out: Request) -> str:
    part = out.messages[0].parts[0]
    assert out.messages[0].role == "user" and isinstance(part, Text)
    return part.text


def task_of(out: Request) -> str | None:
    text = slot_text(out)
    if not text.startswith(TASK_HEADING):
        return None
    return text.removeprefix(TASK_HEADING + "\n").split("\n\n" + STATE_HEADING)[0]


def all_text(messages: list[Message]) -> str:
    return jsonio.dumps_str([repr(m) for m in messages])


# P and Σ -----------------------------------------------------------------------------------


def test_system_is_the_procedure_then_the_protocol_and_tools_are_the_clients() -> None:
    req = request(user("clean the table"))
    out = paper(req, {"step": 3, "findings": {"nulls": "column b"}})
    assert out.system[: len(P)] == P
    protocol = out.system[-1].text
    assert protocol.startswith(PAPER_PROTOCOL)
    assert ENVELOPE_SHAPE in protocol and "null deletes" in protocol
    assert "- findings:" in protocol and "- step:" in protocol
    assert out.tools == req.tools
    assert state_json({"step": 3, "findings": {"nulls": "column b"}}) in slot_text(out)


def test_the_input_request_is_not_mutated() -> None:
    req = request(user("a"), calls("c1"), result("c1"), user("b"))
    before = copy.deepcopy(req)
    paper(req)
    assert req == before


# The observation ---------------------------------------------------------------------------


def test_the_first_request_observes_the_instruction_without_repeating_it() -> None:
    req = request(user("clean the table"))
    out = paper(req)
    assert out.messages[1:] == [req.messages[0]]
    assert task_of(out) is None
    assert slot_text(out).startswith(STATE_HEADING)


def test_tool_results_are_observed_with_the_call_they_answer() -> None:
    req = request(
        user("clean the table"),
        calls("c1"),
        result("c1", "old output"),
        calls("c2", "c3", text="checking two columns"),
        result("c2", "col a ok"),
        result("c3", "col b has nulls"),
    )
    out = paper(req)
    assert task_of(out) == "clean the table"
    assert out.messages[1:] == req.messages[3:]
    assert out.messages[1] is req.messages[3]
    assert "old output" not in all_text(out.messages)


def test_anthropic_results_with_text_beside_them_are_still_the_observation() -> None:
    beside = Message("user", [ToolResult("c1", [Text("done")]), Text("<system-reminder>x")])
    req = request(user("go"), calls("c1"), beside, wire=Wire.MESSAGES)
    out = paper(req)
    assert out.messages[1:] == req.messages[1:]
    assert task_of(out) == "go"


def test_a_turn_split_over_several_assistant_messages_is_kept_whole() -> None:
    thinking = Message("assistant", [Reasoning("plan", signature="sig")])
    req = request(user("go"), thinking, calls("c1"), result("c1"), wire=Wire.RESPONSES)
    assert paper(req).messages[1:] == req.messages[1:]


def test_a_result_whose_call_came_earlier_reaches_back_to_it() -> None:
    messages = [user("go"), calls("c1"), user("note"), calls("c2"), result("c2"), result("c1")]
    assert result_batch(messages, len(messages)) == messages[1:]


# The task slot -----------------------------------------------------------------------------


def test_an_instruction_during_a_tool_loop_goes_to_the_task_slot() -> None:
    req = request(
        user("clean the table"),
        calls("c1"),
        result("c1", "first"),
        calls("c2"),
        result("c2", "second"),
        user("also drop empty rows"),
    )
    out = paper(req)
    assert task_of(out) == "also drop empty rows"
    assert out.messages[1:] == req.messages[3:5]
    assert "also drop empty rows" not in all_text(out.messages[1:])
    assert "clean the table" not in all_text(out.messages)


def test_the_task_slot_keeps_the_newest_instruction_as_the_loop_goes_on() -> None:
    req = request(
        user("clean the table"),
        calls("c1"),
        result("c1"),
        user("also drop empty rows"),
        calls("c2"),
        result("c2"),
        user("and sort by date"),
        calls("c3"),
        result("c3", "sorted"),
    )
    out = paper(req)
    assert task_of(out) == "and sort by date"
    assert out.messages[1:] == req.messages[7:]
    text = all_text(out.messages)
    assert "also drop empty rows" not in text and "clean the table" not in text


def test_an_instruction_after_an_unanswered_loop_leaves_the_observation_empty() -> None:
    req = request(user("a"), calls("c1"), user("stop and summarise"))
    out = paper(req)
    assert task_of(out) == "stop and summarise"
    assert len(out.messages) == 1


def test_the_sessions_task_fills_the_slot_when_the_messages_hold_no_instruction() -> None:
    req = request(calls("c9"), result("c9", "42 rows"))
    out = paper(req, task="clean the table")
    assert task_of(out) == "clean the table"
    assert out.messages[1:] == req.messages
    assert task_of(paper(req)) is None


def test_a_trailing_assistant_prefill_is_kept_after_the_observation() -> None:
    req = request(user("go"), calls("c1"), result("c1"), Message("assistant", [Text("{")]))
    out = paper(req)
    assert out.messages[1:] == req.messages[1:]


def test_an_instruction_sent_beside_tool_results_is_the_newest() -> None:
    """Anthropic's wire sends the user's next words in the message of the results they
    follow; a host's reminder there is context, not an instruction."""
    said = Message("user", [ToolResult("c1", [Text("output")]), Text("Step 99: answer now.")])
    reminded = Message(
        "user", [ToolResult("c1", [Text("output")]), Text("<system-reminder>x</system-reminder>")]
    )
    assert newest_instruction([user("Step 0: begin."), calls("c1"), said]) == "Step 99: answer now."
    assert newest_instruction([user("Step 0: begin."), calls("c1"), reminded]) == "Step 0: begin."


def test_newest_instruction_skips_results_and_system_messages() -> None:
    messages = [
        user("first"),
        Message("user", [Text("second"), Text("with two parts")]),
        calls("c1"),
        result("c1", "output", wire=Wire.MESSAGES),
        Message("system", [Text("mid-conversation note")]),
    ]
    assert newest_instruction(messages) == "second\n\nwith two parts"
    assert newest_instruction(messages[2:]) is None
    assert observe(messages).messages == messages[2:4]


# Real clients ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wire", "name", "instruction"),
    [
        (Wire.RESPONSES, "openai-responses/codex-function-call-output.json", "Run: echo"),
        (Wire.CHAT, "openai-chat/opencode-tool-result.json", '"Run: echo'),
        (Wire.MESSAGES, "anthropic-messages/claude-code-tool-result.json", "<system-reminder>"),
    ],
)
def test_recorded_tool_results_render_and_encode(wire: Wire, name: str, instruction: str) -> None:
    codec = adapter(wire)
    req = codec.decode_request(json.loads((RECORDED / name).read_bytes()))
    out = render_paper(
        req, procedure=procedure_of(req), state={"step": 1}, schema=SCHEMA, task=None
    )
    task = task_of(out)
    assert task is not None and task.startswith(instruction)
    assert out.messages[1:] == req.messages[-2:]
    body = codec.encode_request(out)
    assert "skillstate-e2e" in jsonio.dumps_str(body)


def test_the_procedure_of_a_codex_session_is_its_developer_prompt() -> None:
    body = json.loads((RECORDED / "openai-responses/codex-first.json").read_bytes())
    req = adapter(Wire.RESPONSES).decode_request(body)
    procedure = procedure_of(req)
    assert procedure and procedure[0].text.startswith("You are a coding agent")
    assert all("echo skillstate-e2e" not in t.text for t in procedure)


# A long session ----------------------------------------------------------------------------


def test_a_200_step_loop_keeps_every_request_within_a_fixed_size() -> None:
    rng = random.Random(7)
    codec = adapter(Wire.CHAT)
    messages = [user("clean the table")]
    longest = 1500
    sizes: list[int] = []
    transcript = 0
    for n in range(200):
        ids = [f"s{n}a", f"s{n}b"] if n % 5 == 0 else [f"s{n}"]
        messages.append(calls(*ids, text=f"step {n}"))
        messages += [result(i, "x" * rng.randint(200, longest)) for i in ids]
        if n == 120:
            messages.append(user("also drop empty rows"))
        state = {"step": n, "findings": {"rows": f"{n * 10} rows checked"}}
        out = paper(request(*messages), state)
        sent = [p for m in out.messages for p in m.parts]
        call_ids = {p.id for p in sent if isinstance(p, ToolCall)}
        assert call_ids == {p.call_id for p in sent if isinstance(p, ToolResult)}
        expected = "clean the table" if n < 120 else "also drop empty rows"
        assert task_of(out) == expected
        sizes.append(len(jsonio.dumps(codec.encode_request(out))))
        transcript = len(jsonio.dumps(codec.encode_request(request(*messages))))
    fixed = len(jsonio.dumps(codec.encode_request(paper(request(user("clean the table"))))))
    assert max(sizes) <= fixed + 2 * longest + 1000
    assert transcript > 50 * max(sizes)
