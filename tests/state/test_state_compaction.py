"""Host compaction, the pure part: which requests ask to compact (on the shapes the real hosts
send, tests/fixtures/compaction), what the summary holds for a known Σ and transcript, and
the gateway's own compaction items on the Responses wire."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from skillstate.conversation import Message, Opaque, Request, Text, ToolCall, ToolResult, Wire
from skillstate.protocols import adapter
from skillstate.protocols.openai_responses.compaction import (
    SUMMARY_NOTE,
    own_summary,
    summary_item,
    summary_part,
    unwrap_summaries,
    user_items,
)
from skillstate.state.compaction import (
    MAX_COMMANDS,
    MAX_INSTRUCTIONS,
    MAX_SUMMARY_CHARS,
    Compaction,
    compact_summary,
    compaction_of,
    is_compaction,
    state_has_content,
    transcript,
)
from skillstate.state.schema import StateSchema
from skillstate.state.sweep import flattened_transcript, sweep

FIXTURES = Path(__file__).parents[1] / "fixtures"
COMPACTION = FIXTURES / "compaction"
RECORDED = FIXTURES / "recorded"
SCHEMA = StateSchema.from_keys(None)

STATE = {
    "objective": "Fix the parser test",
    "plan": {
        "read": {"step": "read the failing test", "status": "done"},
        "fix": {"step": "make parse('') return []", "status": "active"},
        "ship": {"step": "run the whole suite", "status": "todo"},
    },
    "findings": {"empty": "parse('') returns None today"},
    "files": {"tests/test_parser.py": "expects [] for empty input"},
    "decisions": {"keep-api": "parse keeps its signature"},
    "errors_tried": {"pytest": "`python -m pytest -q` failed on test_empty"},
    "open": {"unicode": "should whitespace-only input count as empty?"},
    "working": {"cwd": "/home/user/work", "branch": "fix-parser", "active_files": ["parser.py"]},
    "step": 4,
}

#: fixture -> (client wire, what it asks for)
SHAPES = {
    "claude-code-compact.json": (Wire.MESSAGES, Compaction.CLAUDE_CODE),
    "codex-local-compact.json": (Wire.RESPONSES, Compaction.CODEX),
    "codex-remote-compact.json": (Wire.RESPONSES, Compaction.CODEX_REMOTE),
    "opencode-compact.json": (Wire.CHAT, Compaction.OPENCODE),
    "opencode-compact-prior.json": (Wire.CHAT, Compaction.OPENCODE),
}


def fixture(name: str, wire: Wire) -> Request:
    return adapter(wire).decode_request(json.loads((COMPACTION / name).read_text()))


def recorded(wire: Wire, name: str) -> Request:
    return adapter(wire).decode_request(json.loads((RECORDED / wire.value / name).read_bytes()))


# --- detection ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_each_hosts_compaction_request_is_recognised(name: str) -> None:
    wire, kind = SHAPES[name]
    request = fixture(name, wire)
    assert compaction_of(request) is kind
    assert is_compaction(request)


@pytest.mark.parametrize(
    "opening",
    [
        "Your task is to create a detailed summary of the conversation so far",
        "Your task is to create a detailed summary of the RECENT portion of the conversation",
        "Your task is to create a detailed summary of this conversation. This summary will be",
    ],
    ids=["full", "recent-portion", "up-to"],
)
def test_claude_codes_partial_compactions_are_recognised(opening: str) -> None:
    request = fixture("claude-code-compact.json", Wire.MESSAGES)
    last = request.messages[-1]
    prompt = f"{opening} [...]\n<summary>\n[...]\n</summary>"
    parts = [p for p in last.parts if not isinstance(p, Text)] + [Text(prompt)]
    request.messages[-1] = dataclasses.replace(last, parts=parts)
    assert compaction_of(request) is Compaction.CLAUDE_CODE


@pytest.mark.parametrize(
    ("wire", "name"),
    [
        (Wire.MESSAGES, "claude-code-first.json"),
        (Wire.MESSAGES, "claude-code-tool-result.json"),
        (Wire.MESSAGES, "claude-code-title.json"),
        (Wire.RESPONSES, "codex-first.json"),
        (Wire.RESPONSES, "codex-function-call-output.json"),
        (Wire.CHAT, "opencode-first.json"),
        (Wire.CHAT, "opencode-title.json"),
        (Wire.CHAT, "opencode-tool-result.json"),
    ],
)
def test_the_hosts_ordinary_requests_are_not_compactions(wire: Wire, name: str) -> None:
    assert compaction_of(recorded(wire, name)) is None


def test_a_prompt_that_is_not_the_last_message_asks_for_nothing() -> None:
    request = fixture("codex-local-compact.json", Wire.RESPONSES)
    request.messages.append(Message("assistant", [Text("Here is the summary.")]))
    assert compaction_of(request) is None
    trigger = fixture("codex-remote-compact.json", Wire.RESPONSES)
    trigger.messages.append(Message("user", [Text("and now continue")]))
    assert compaction_of(trigger) is None


def test_one_of_the_phrases_alone_is_not_a_compaction() -> None:
    texts = [
        "Please create a detailed summary of the design doc.",
        "Wrap the result in <summary> tags.",
        "Here is the conversation so far: <conversation>hi</conversation>",
        "Explain: You are performing a CONTEXT CHECKPOINT COMPACTION",
    ]
    for text in texts:
        request = Request("m", [Message("user", [Text(text)])], Wire.CHAT)
        assert compaction_of(request) is None, text


# --- the transcript a request is about -------------------------------------------------------


def test_claude_codes_transcript_keeps_the_last_tool_result_and_drops_the_prompt() -> None:
    request = fixture("claude-code-compact.json", Wire.MESSAGES)
    messages = transcript(request, Compaction.CLAUDE_CODE)
    last = messages[-1]
    assert [type(p) for p in last.parts] == [ToolResult]
    assert len(messages) == len(request.messages)


def test_codex_transcript_drops_the_prompt_item() -> None:
    for name, kind in [
        ("codex-local-compact.json", Compaction.CODEX),
        ("codex-remote-compact.json", Compaction.CODEX_REMOTE),
    ]:
        request = fixture(name, Wire.RESPONSES)
        assert transcript(request, kind) == request.messages[:-1]


def test_opencodes_flattened_conversation_is_read_back_into_messages() -> None:
    request = fixture("opencode-compact.json", Wire.CHAT)
    messages = transcript(request, Compaction.OPENCODE)
    calls = [p for m in messages for p in m.parts if isinstance(p, ToolCall)]
    results = [p for m in messages for p in m.parts if isinstance(p, ToolResult)]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("read", {"filePath": "/home/user/proj/tests/test_parser.py"}),
        ("bash", {"command": "python -m pytest -q", "description": "Run the tests"}),
    ]
    assert [(r.call_id, r.is_error) for r in results] == [(calls[0].id, False), (calls[1].id, True)]
    assert "3:     assert parser.parse('') == []" in results[0].content[0].text
    found = sweep(messages)
    assert found.instructions == (
        "Fix the failing test in tests/test_parser.py and run the suite.",
    )
    assert found.last_text == "The test expects an empty list; running the suite."


def test_a_text_without_a_conversation_flattens_to_nothing() -> None:
    assert flattened_transcript("Summarize this: [User]: hi") == []


# --- the summary ----------------------------------------------------------------------------


def _conversation() -> list[Message]:
    read = ToolCall("c1", "Read", json.dumps({"file_path": "src/parser.py"}))
    edit = ToolCall("c2", "Edit", json.dumps({"file_path": "tests/test_parser.py"}))
    run = ToolCall("c3", "Bash", json.dumps({"command": "python -m pytest -q"}))
    lost = ToolCall("c4", "Bash", json.dumps({"command": "git status"}))
    return [
        Message(
            "user",
            [
                Text("<system-reminder>\nToday's date is 2026-12-01.\n</system-reminder>"),
                Text("Fix the parser.\nKeep the public API unchanged."),
            ],
        ),
        Message("assistant", [Text("Reading the parser."), read, edit]),
        Message("user", [ToolResult("c1", [Text("def parse(s): ...")])]),
        Message("user", [ToolResult("c2", [Text("edited")])]),
        Message("assistant", [run]),
        Message("user", [ToolResult("c3", [Text("Exit code 1\n..F\nFAILED test_empty")])]),
        Message("user", [Text("<environment_context><cwd>/w</cwd></environment_context>")]),
        Message("user", [Text("Also add a test for whitespace.")]),
        Message("assistant", [Text("Adding the whitespace test next."), lost]),
    ]


def _section(summary: str, title: str) -> list[str]:
    """The lines of section ``title`` of a summary."""
    lines = summary.split("\n")
    start = lines.index(f"## {title}") + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return [line for line in lines[start:end] if line]


def test_the_summary_renders_every_key_of_state_in_schema_order() -> None:
    summary = compact_summary(STATE, [], SCHEMA)
    titles = [line[3:] for line in summary.split("\n") if line.startswith("## ")]
    assert titles == [
        "Objective",
        "Plan",
        "Findings",
        "Files",
        "Decisions",
        "Errors tried",
        "Working",
        "Open questions",
        "Step",
    ]
    assert _section(summary, "Objective") == ["Fix the parser test"]
    assert _section(summary, "Plan") == [
        "- [done] read: read the failing test",
        "- [active] fix: make parse('') return []",
        "- [todo] ship: run the whole suite",
    ]
    assert _section(summary, "Files") == ["- tests/test_parser.py: expects [] for empty input"]
    assert _section(summary, "Working") == [
        "- cwd: /home/user/work",
        "- branch: fix-parser",
        "- active_files: parser.py",
    ]
    assert _section(summary, "Open questions") == [
        "- unicode: should whitespace-only input count as empty?"
    ]
    assert _section(summary, "Step") == ["4"]


def test_the_sweep_quotes_instructions_commands_files_and_the_last_text() -> None:
    summary = compact_summary({"objective": "Fix the parser"}, _conversation(), SCHEMA)
    assert _section(summary, "User instructions (verbatim)") == [
        "- Fix the parser.",
        "  Keep the public API unchanged.",
        "- Also add a test for whitespace.",
    ]
    assert _section(summary, "Commands run") == [
        "- `python -m pytest -q` → exit 1: FAILED test_empty",
        "- `git status` → no result",
    ]
    assert _section(summary, "Files touched") == [
        "- src/parser.py: read",
        "- tests/test_parser.py: edited",
    ]
    assert _section(summary, "Last assistant message") == ["Adding the whitespace test next."]
    assert "system-reminder" not in summary and "environment_context" not in summary


def test_files_state_already_lists_are_not_repeated() -> None:
    state = {"files": {"src/parser.py": "parse lives here"}}
    summary = compact_summary(state, _conversation(), SCHEMA)
    assert _section(summary, "Files touched") == ["- tests/test_parser.py: edited"]


def test_custom_keys_and_values_of_any_shape_are_rendered() -> None:
    schema = StateSchema.from_keys(["notes", "step", "budget"])
    state = {"notes": ["first", {"k": 1}], "budget": {"tokens": 1200}}
    summary = compact_summary(state, [], schema)
    assert _section(summary, "Notes") == ["- first", '- {"k": 1}']
    assert _section(summary, "Budget") == ["- tokens: 1200"]
    assert "## Step" not in summary


def test_a_step_count_alone_is_not_state_content() -> None:
    assert not state_has_content({})
    assert not state_has_content({"step": 7})
    assert not state_has_content({"step": 7, "findings": {}, "objective": ""})
    assert state_has_content({"step": 7, "objective": "x"})
    assert "## Step" not in compact_summary({"step": 0, "objective": "x"}, [], SCHEMA)


def test_the_summary_stays_within_its_bound() -> None:
    findings = {f"f{i}": "x" * 400 for i in range(150)}
    summary = compact_summary({"findings": findings}, _conversation() * 40, SCHEMA)
    assert len(summary) <= MAX_SUMMARY_CHARS
    assert summary.endswith(f"[… cut at {MAX_SUMMARY_CHARS:,} characters]")


def test_the_first_instruction_and_the_newest_are_kept_when_there_are_many() -> None:
    messages = [Message("user", [Text(f"instruction {i}")]) for i in range(30)]
    lines = _section(
        compact_summary({"objective": "x"}, messages, SCHEMA), "User instructions (verbatim)"
    )
    assert len(lines) == MAX_INSTRUCTIONS
    assert lines[0] == "- instruction 0"
    assert lines[-1] == "- instruction 29"
    assert lines[1] == f"- instruction {30 - MAX_INSTRUCTIONS + 1}"


def test_only_the_newest_commands_are_listed() -> None:
    messages = []
    for i in range(MAX_COMMANDS + 5):
        call = ToolCall(f"c{i}", "Bash", json.dumps({"command": f"echo {i}"}))
        messages += [
            Message("assistant", [call]),
            Message("user", [ToolResult(f"c{i}", [Text(str(i))])]),
        ]
    lines = _section(compact_summary({"objective": "x"}, messages, SCHEMA), "Commands run")
    assert lines[0] == "- (5 earlier commands not shown)"
    assert lines[1] == "- `echo 5` → done: 5"
    assert len(lines) == MAX_COMMANDS + 1


def test_the_summary_is_the_same_for_the_same_session() -> None:
    request = fixture("codex-local-compact.json", Wire.RESPONSES)
    first = compact_summary(STATE, transcript(request, Compaction.CODEX), SCHEMA)
    again = fixture("codex-local-compact.json", Wire.RESPONSES)
    assert compact_summary(STATE, transcript(again, Compaction.CODEX), SCHEMA) == first


# --- the gateway's own compaction items (Responses wire) -------------------------------------


def test_a_compaction_item_of_the_gateway_carries_its_summary() -> None:
    summary = "## Objective\nRéparer l'analyseur ✓"
    item = summary_item(summary, "cmp_1")
    assert item["type"] == "compaction" and item["id"] == "cmp_1"
    assert own_summary(Opaque(Wire.RESPONSES, item)) == summary
    foreign = {"type": "compaction", "id": "cmp_2", "encrypted_content": "gAAAAABo-real"}
    assert own_summary(Opaque(Wire.RESPONSES, foreign)) is None
    assert own_summary(Text(item["encrypted_content"])) is None


def test_unwrapping_turns_the_gateways_items_into_user_messages() -> None:
    task = Message("user", [Text("Fix the parser.")])
    foreign = Opaque(Wire.RESPONSES, {"type": "compaction", "encrypted_content": "gAAA"})
    ours = summary_part("## Objective\nFix the parser", "cmp_9")
    request = Request(
        "m", [task, Message("user", [foreign]), Message("user", [ours])], Wire.RESPONSES
    )
    unwrapped = unwrap_summaries(request)
    assert unwrapped is not None
    assert unwrapped.messages[:2] == request.messages[:2]
    assert unwrapped.messages[2] == Message(
        "user", [Text(SUMMARY_NOTE + "## Objective\nFix the parser")]
    )
    assert unwrap_summaries(dataclasses.replace(request, messages=request.messages[:2])) is None


def test_the_compacted_history_keeps_the_user_messages_as_sent() -> None:
    body = json.loads((COMPACTION / "codex-responses-compact.json").read_text())
    kept = user_items(body)
    assert kept == [item for item in body["input"] if item.get("role") == "user"]
    assert user_items({"input": "just text"}) == [
        {"type": "message", "role": "user", "content": "just text"}
    ]
