"""The client's tools in a scripted session, in the dialect of one agent host.

A ``Dialect`` says how the scripted model calls a ``ToolUse`` on that host (which tool, which
arguments) and how the host answers the call: the client loop runs the call from its name and
arguments alone, the way a real agent would, and reads files from the ``Workspace``.

* ``CODEX``: everything through ``exec_command`` (``cat``, ``python -m pytest``, ``rg``,
  ``apply_patch`` in a heredoc); each output starts with Codex's header
  (``Chunk ID``, ``Wall time``, ``Process exited with code N``, ``Original token count``,
  ``Output:``).
* ``CLAUDE``: ``Read`` (numbered lines, as Claude Code shows them), ``Bash`` (a failing
  command's output starts with ``Exit code N``) and ``Edit``.
* ``PLAIN``: one ``run_step`` tool, for a custom agent loop (paper mode).
"""

from __future__ import annotations

import hashlib
import random
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from skillstate.conversation import Json
from skillstate.support import jsonio
from skillstate.testing.sessions import ToolUse, Workspace

ROOT = "/home/user/work"


@dataclass(frozen=True, slots=True)
class Dialect:
    """How one host's tools look: ``call`` turns a use into (tool name, arguments); ``run``
    answers a call (name, arguments JSON text) with the tool's output."""

    name: str
    call: Callable[[ToolUse], tuple[str, Json]]
    run: Callable[[Workspace, str, str], str]


def _tests(path: str, seed: str) -> tuple[int, str]:
    """A test run's exit code and output for the module at ``path``."""
    rng = random.Random(f"tests:{path}:{seed}")
    name = path.rsplit("/", 1)[-1].removesuffix(".py")
    passed = rng.randrange(3, 30)
    if rng.random() < 0.6:
        return 0, "." * passed + f"\n{passed} passed in 0.{rng.randrange(10, 99)}s\n"
    lines = ["." * passed + "F", "=" * 30 + " FAILURES " + "=" * 30]
    for i in range(rng.randrange(10, 40)):
        lines.append(f"tests/test_{name}.py:{10 + i}: in test_{name}_{i}")
        lines.append(f"    assert {name}_{i}(value) == {rng.randrange(1000)}")
    lines.append(f"E   AssertionError: assert {rng.randrange(1000)} == {rng.randrange(1000)}")
    lines.append(f"FAILED tests/test_{name}.py::test_{name}_0 - AssertionError")
    lines.append(f"1 failed, {passed} passed in 0.{rng.randrange(10, 99)}s")
    return 1, "\n".join(lines) + "\n"


def _grep(workspace: Workspace, word: str) -> str:
    lines = []
    for index in range(8):
        path = f"src/pkg/{word}_{index:02d}.py"
        lines.append(f"{path}:{index * 7 + 3}:def {word}_value_{index}({word}, value):")
    return "\n".join(lines) + "\n"


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=3).hexdigest()


# Codex ---------------------------------------------------------------------------------------


def _codex_call(use: ToolUse) -> tuple[str, Json]:
    if use.action == "read":
        command = f"cat {use.path}"
    elif use.action == "test":
        command = f"python -m pytest -q tests/test_{_module(use.path)}.py"
    elif use.action == "grep":
        command = f"rg -n 'def {use.path}_' src"
    else:
        command = (
            "apply_patch <<'EOF'\n*** Begin Patch\n"
            f"*** Update File: {use.path}\n@@\n-    return value\n+    return int(value)\n"
            "*** End Patch\nEOF"
        )
    return "exec_command", {"cmd": command, "workdir": ROOT, "yield_time_ms": 10000}


def _codex_run(workspace: Workspace, name: str, arguments: str) -> str:
    command = str(jsonio.loads(arguments)["cmd"])
    code, output = _shell(workspace, command)
    tokens = max(1, len(output) // 4)
    return (
        f"Chunk ID: {_digest(command)}\nWall time: 0.{len(output) % 9000 + 1000:04d} seconds\n"
        f"Process exited with code {code}\nOriginal token count: {tokens}\nOutput:\n{output}"
    )


def _shell(workspace: Workspace, command: str) -> tuple[int, str]:
    if command.startswith("apply_patch"):
        path = command.split("*** Update File: ", 1)[1].split("\n", 1)[0]
        return 0, f"Success. Updated the following files:\nM {path}\n"
    words = shlex.split(command)
    if words[0] == "cat":
        return 0, workspace.text(words[1])
    if words[0] == "rg":
        return 0, _grep(workspace, words[2].removeprefix("def ").removesuffix("_"))
    if words[:3] == ["python", "-m", "pytest"]:
        return _tests(words[-1], str(workspace.seed))
    return 127, f"bash: {words[0]}: command not found\n"


def _module(path: str) -> str:
    return path.rsplit("/", 1)[-1].removesuffix(".py")


# Claude Code ---------------------------------------------------------------------------------


def _claude_call(use: ToolUse) -> tuple[str, Json]:
    if use.action == "read":
        return "Read", {"file_path": f"{ROOT}/{use.path}"}
    if use.action == "edit":
        return "Edit", {
            "file_path": f"{ROOT}/{use.path}",
            "old_string": "    return value",
            "new_string": "    return int(value)",
        }
    _, arguments = _codex_call(use)
    description = "Run the tests" if use.action == "test" else "Search the sources"
    return "Bash", {"command": str(arguments["cmd"]), "description": description}


def _claude_run(workspace: Workspace, name: str, arguments: str) -> str:
    args = jsonio.loads(arguments)
    if name == "Read":
        path = str(args["file_path"]).removeprefix(ROOT + "/")
        lines = workspace.text(path).splitlines()
        return "\n".join(f"{i:>6}\t{line}" for i, line in enumerate(lines, start=1))
    if name == "Edit":
        return f"The file {args['file_path']} has been updated successfully."
    code, output = _shell(workspace, str(args["command"]))
    return output if code == 0 else f"Exit code {code}\n{output}"


# A custom loop -------------------------------------------------------------------------------


def _plain_call(use: ToolUse) -> tuple[str, Json]:
    return "run_step", {"action": use.action, "path": use.path}


def _plain_run(workspace: Workspace, name: str, arguments: str) -> str:
    args = jsonio.loads(arguments)
    return f"{args['action']} {args['path']}: ok\n" + workspace.text(str(args["path"]))[:2000]


CODEX = Dialect("codex", _codex_call, _codex_run)
CLAUDE = Dialect("claude", _claude_call, _claude_run)
PLAIN = Dialect("plain", _plain_call, _plain_run)
