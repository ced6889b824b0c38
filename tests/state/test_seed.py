"""The deterministic seed: files, failed commands and the step, read off real hosts' tool calls,
filling only the holes the model left in Σ."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from skillstate.conversation import Message, Opaque, Request, Text, ToolCall, ToolResult, Wire
from skillstate.protocols import adapter
from skillstate.state.schema import Bounds, JsonKind, Shape, StateSchema
from skillstate.state.seed import (
    MAX_SEEDED_FILES,
    assistant_turns,
    read_outcome,
    seed_state,
)

RECORDED = Path(__file__).parents[1] / "fixtures" / "recorded"
SCHEMA = StateSchema.from_keys(None)

PATCH = """*** Begin Patch
*** Update File: src/parser.py
@@ def parse_list(tokens):
-    if tokens[-1] == ",":
+    if tokens and tokens[-1] == ",":
*** Add File: tests/test_commas.py
+def test_trailing_comma():
+    assert parse("[1,]") == [1]
*** Delete File: src/old_parser.py
*** End Patch"""


def recorded(wire: Wire, name: str) -> Request:
    return adapter(wire).decode_request(json.loads((RECORDED / name).read_bytes()))


def codex_output(code: int, output: str) -> str:
    """A Codex ``exec_command`` result: its header, then the output."""
    return (
        f"Chunk ID: 3f9a1c\nWall time: 0.4120 seconds\nProcess exited with code {code}\n"
        f"Original token count: {len(output) // 4}\nOutput:\n{output}"
    )


def turn(
    call_id: str, name: str, arguments: Any, output: str, *, kind: str = "function", **kw: Any
) -> list[Message]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    call = ToolCall(call_id, name, text, kind=kind)
    return [
        Message("assistant", [call]),
        Message("tool", [ToolResult(call_id, [Text(output)], **kw)]),
    ]


def codex_session() -> list[Message]:
    """The recorded Codex request, extended with a realistic fix-the-parser loop."""
    messages = recorded(Wire.RESPONSES, "openai-responses/codex-function-call-output.json").messages
    workdir = "/home/user/work"
    messages += turn(
        "c2",
        "exec_command",
        {"cmd": "sed -n '1,80p' src/parser.py", "workdir": workdir},
        codex_output(0, "def parse_list(tokens):\n    ...\n"),
    )
    messages += turn(
        "c3",
        "exec_command",
        {"cmd": "pytest -q tests", "workdir": workdir, "yield_time_ms": 10000},
        codex_output(
            1, "F...\nE   IndexError: list index out of range\n1 failed, 3 passed in 0.10s\n"
        ),
    )
    messages += turn(
        "c4", "apply_patch", PATCH, "Success. Updated the following files:", kind="custom"
    )
    messages += turn(
        "c5", "shell", {"command": ["bash", "-lc", "cat README.md"]}, codex_output(0, "# parser\n")
    )
    return messages


def test_a_codex_session_seeds_files_errors_and_the_step() -> None:
    messages = codex_session()
    seeded = seed_state({}, messages, SCHEMA)
    assert seeded["files"] == {
        "src/parser.py": "read, edited",
        "tests/test_commas.py": "written",
        "src/old_parser.py": "deleted",
        "README.md": "read",
    }
    assert seeded["errors_tried"] == {
        "pytest-q-tests": "`pytest -q tests` exited with code 1: 1 failed, 3 passed in 0.10s"
    }
    assert seeded["step"] == 5 == assistant_turns(messages)
    assert set(seeded) == {"files", "errors_tried", "step"}


def test_a_claude_code_session() -> None:
    messages = recorded(Wire.MESSAGES, "anthropic-messages/claude-code-tool-result.json").messages
    messages += turn("t2", "Read", {"file_path": "/home/user/work/app.js"}, "1\tconst x = 1")
    messages += turn(
        "t3",
        "Edit",
        {"file_path": "/home/user/work/app.js", "old_string": "1", "new_string": "2"},
        "The file has been updated.",
    )
    messages += turn(
        "t4", "Write", {"file_path": "/home/user/work/app.test.js", "content": "x"}, "ok"
    )
    messages += turn(
        "t5",
        "Bash",
        {"command": "npm test", "description": "Run the tests"},
        "Exit code 1\n> app@1.0.0 test\nFAIL app.test.js\n  expected 2, got 1",
        is_error=True,
    )
    messages += turn(
        "t6",
        "Edit",
        {"file_path": "/home/user/work/missing.js", "old_string": "a", "new_string": "b"},
        "<tool_use_error>File does not exist.</tool_use_error>",
        is_error=True,
    )
    seeded = seed_state({}, messages, SCHEMA)
    assert seeded["files"] == {
        "/home/user/work/app.js": "read, edited",
        "/home/user/work/app.test.js": "written",
        "/home/user/work/missing.js": "edited",
    }
    assert seeded["errors_tried"] == {
        "npm-test": "`npm test` exited with code 1: expected 2, got 1",
        "edit-home-user-work-missing-js": (
            "Edit /home/user/work/missing.js failed: "
            "<tool_use_error>File does not exist.</tool_use_error>"
        ),
    }


def test_an_opencode_session() -> None:
    messages = recorded(Wire.CHAT, "openai-chat/opencode-tool-result.json").messages
    messages += turn("o2", "read", {"filePath": "/w/src/index.ts", "offset": 0}, "<file>…</file>")
    messages += turn(
        "o3", "edit", {"filePath": "/w/src/index.ts", "oldString": "a"}, "Edit applied"
    )
    messages += turn("o4", "write", {"filePath": "/w/notes.md", "content": "x"}, "Wrote file")
    messages += turn("o5", "glob", {"pattern": "**/*.ts", "path": "/w"}, "/w/src/index.ts")
    seeded = seed_state({}, messages, SCHEMA)
    assert seeded["files"] == {"/w/src/index.ts": "read, edited", "/w/notes.md": "written"}
    assert "errors_tried" not in seeded
    assert seeded["step"] == 5


def test_what_the_model_wrote_is_never_overwritten() -> None:
    state = {
        "files": {"src/parser.py": "the list parser; bug on trailing commas"},
        "errors_tried": {"pytest-q-tests": "IndexError: fixed by guarding empty tokens"},
        "step": 2,
    }
    before = copy.deepcopy(state)
    seeded = seed_state(state, codex_session(), SCHEMA)
    assert state == before
    assert seeded["files"]["src/parser.py"] == before["files"]["src/parser.py"]
    assert seeded["files"]["README.md"] == "read"
    assert seeded["errors_tried"] == before["errors_tried"]
    assert seeded["step"] == 2


def test_only_keys_of_the_schema_are_seeded() -> None:
    messages = codex_session()
    assert seed_state({}, messages, StateSchema.from_keys(["step", "notes"])) == {"step": 5}
    state = {"notes": "keep"}
    assert seed_state(state, messages, StateSchema.from_keys(["notes"])) == state


def test_keys_whose_type_is_not_an_object_or_an_integer_are_left_alone() -> None:
    inferred = StateSchema({"files": Shape(), "errors_tried": Shape()})
    mine = {"files": "see the notes", "errors_tried": ["a list the model chose"]}
    assert seed_state(mine, codex_session(), inferred) == mine
    assert set(seed_state({}, codex_session(), inferred)) == {"files", "errors_tried"}
    textual = StateSchema({"step": Shape(JsonKind.STRING), "files": Shape(JsonKind.ARRAY)})
    assert seed_state({}, codex_session(), textual) == {}


def test_the_window_limits_which_calls_are_read() -> None:
    messages = codex_session()
    window = range(len(messages) - 2, len(messages))
    seeded = seed_state({}, messages, SCHEMA, window=window)
    assert seeded["files"] == {"README.md": "read"}
    failed_call = next(i for i, m in enumerate(messages) if "pytest" in repr(m.parts))
    alone = seed_state({}, messages, SCHEMA, window=range(failed_call, failed_call + 1))
    assert list(alone["errors_tried"]) == ["pytest-q-tests"]


def test_seeding_is_deterministic() -> None:
    assert seed_state({}, codex_session(), SCHEMA) == seed_state({}, codex_session(), SCHEMA)


def test_the_newest_files_win_past_the_cap() -> None:
    messages: list[Message] = []
    for n in range(MAX_SEEDED_FILES + 8):
        messages += turn(f"r{n}", "Read", {"file_path": f"src/m{n}.py"}, "x")
    files = seed_state({}, messages, SCHEMA)["files"]
    assert len(files) == MAX_SEEDED_FILES
    assert "src/m7.py" not in files and f"src/m{MAX_SEEDED_FILES + 7}.py" in files


def test_a_seed_that_would_pass_the_state_bound_changes_nothing() -> None:
    tight = StateSchema(SCHEMA.keys, Bounds(max_state_bytes=120))
    state = {"objective": "x" * 60}
    assert seed_state(state, codex_session(), tight) is state


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("cat src/a.py src/b.py", {"src/a.py": "read", "src/b.py": "read"}),
        ("nl -ba src/a.py | sed -n '1,40p'", {"src/a.py": "read"}),
        ("head -n 20 'my file.py'", {"my file.py": "read"}),
        ("sed -n -e '1,9p' a.py b.py", {"a.py": "read", "b.py": "read"}),
        ("sed -i 's/old/new/' src/a.py", {"src/a.py": "edited"}),
        ("cd src && cat a.py", {}),
        ("cat a.py > b.py", {}),
        ("cat $(ls)", {}),
        ("rg -n parse src", {}),
        ("apply_patch <<'EOF'\n" + PATCH + "\nEOF", {"src/parser.py": "edited"}),
    ],
)
def test_paths_read_off_shell_commands(command: str, expected: dict[str, str]) -> None:
    messages = turn("b1", "bash", {"command": command}, "output")
    seeded = seed_state({}, messages, StateSchema.from_keys(["files"]))
    found = seeded.get("files", {})
    assert {path: found[path] for path in expected} == expected
    if not expected:
        assert found == {}


def test_successful_commands_are_not_errors() -> None:
    quoting = codex_output(0, "log line: Exit code 3\nProcess exited with code 9\n")
    messages = turn("c1", "exec_command", {"cmd": "cat log.txt"}, quoting)
    assert "errors_tried" not in seed_state({}, messages, SCHEMA)


def test_outcomes_of_each_host() -> None:
    codex = read_outcome(ToolResult("c", [Text(codex_output(2, "boom\n\n"))]))
    assert (codex.exit_code, codex.failed, codex.last_line) == (2, True, "boom")
    claude = read_outcome(ToolResult("t", [Text("Exit code 127\nsh: nope: not found")], True))
    assert (claude.exit_code, claude.failed, claude.last_line) == (127, True, "sh: nope: not found")
    plain = read_outcome(ToolResult("o", [Text("Exit code 1 is what the log says")]))
    assert plain.exit_code is None and not plain.failed
    flagged = read_outcome(ToolResult("o", [Text("permission denied")], is_error=True))
    assert (flagged.exit_code, flagged.failed) == (None, True)
    fine = read_outcome(ToolResult("o", [Text("all good")]))
    assert not fine.failed and fine.last_line == "all good"


def test_only_the_head_and_the_tail_of_a_long_output_are_read() -> None:
    """The seed reads every new result on the event loop: a multi-megabyte output costs it
    a few kilobytes, not a pass over the whole text."""
    huge = "x" * (8 * 1024 * 1024)
    codex = read_outcome(ToolResult("c", [Text(codex_output(1, huge + "\nerror: boom\n"))]))
    assert (codex.exit_code, codex.failed, codex.last_line) == (1, True, "error: boom")
    # A marker deep inside the output is output, not Codex's header.
    late = read_outcome(ToolResult("c", [Text("y" * 8192 + codex_output(3, "tail"))]))
    assert late.exit_code is None and late.last_line == "tail"


def test_opaque_items_of_a_result_are_not_read_as_output() -> None:
    """A tool search result holds ``tool_reference`` blocks: no output, no failure."""
    reference = Opaque(Wire.MESSAGES, {"type": "tool_reference", "tool_name": "Exit code 1"})
    found = read_outcome(ToolResult("t", [reference]))
    assert (found.exit_code, found.failed, found.last_line) == (None, False, "")
    mixed = read_outcome(ToolResult("t", [Text("Exit code 2\nboom"), reference]))
    assert (mixed.exit_code, mixed.failed, mixed.last_line) == (2, True, "boom")
