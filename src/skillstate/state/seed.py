"""The deterministic seed: facts read off the tool calls, filling the holes the model left in Σ.

A model that forgets to patch Σ would lose, at the next collapse, what its tool calls showed:
which files it read or changed, which commands failed. The seed recovers those from the calls
themselves, the same way every time, and only ever *adds*: a key or entry the model wrote is
never touched (DESIGN.md, "State modes"). It reads the tools of the common agent hosts:

* files: Claude Code ``Read``/``Edit``/``MultiEdit``/``Write``/``NotebookEdit`` (``file_path``,
  ``notebook_path``), OpenCode ``read``/``edit``/``write`` (``filePath``), Codex ``apply_patch``
  (a freeform patch whose ``*** Add/Update/Delete File:`` lines name the paths, also when run
  through the shell), and simple shell reads (``cat``, ``head``, ``tail``, ``nl``, ``sed``; a
  ``sed -i`` edits);
* commands: Codex ``exec_command`` (``cmd``) and ``shell`` (``command`` as an argv), Claude
  Code ``Bash`` and OpenCode ``bash`` (``command``). A command failed when its result says so:
  Codex's ``Process exited with code N`` header, Claude Code's leading ``Exit code N``, or a
  result flagged as an error. Failures go to ``errors_tried``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from skillstate.conversation.model import Json, Message, Text, ToolCall, ToolResult
from skillstate.conversation.prefixes import PrefixMemo
from skillstate.state.merge import apply_patch
from skillstate.state.schema import RESERVED_KEYS, JsonKind, StateSchema, fits
from skillstate.support import jsonio

MAX_SEEDED_FILES = 32
"""The most ``files`` entries one seed adds (the newest win): Σ is sent on every request."""

MAX_SEEDED_ERRORS = 8
"""The most ``errors_tried`` entries one seed adds (the newest win)."""

LINE_CHARS = 160
_TAIL_CHARS = 16 * 1024
"""How much of the end of a tool's output is searched for its last line."""
_HEAD_CHARS = 4 * 1024
"""How much of the start of a tool's output is searched for Codex's ``Output:`` line."""
_OUTPUT = "\nOutput:\n"
"""The longest line of output quoted in an ``errors_tried`` entry."""

_FILE_TOOLS = {
    "read": "read",
    "view": "read",
    "edit": "edited",
    "multiedit": "edited",
    "notebookedit": "edited",
    "write": "written",
}
_PATH_KEYS = ("file_path", "filePath", "notebook_path", "path")
_SHELL_TOOLS = ("exec_command", "shell", "bash", "local_shell")
_PATCH_TOOLS = ("apply_patch", "patch")
_READERS = ("cat", "head", "tail", "nl", "less", "more")
_OPTION_VALUES = ("-n", "-c", "--lines", "--bytes")
_OPERATOR = re.compile(r"[();<>|&]+\Z")
_PATCH_LINE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$", re.M)
_PATCH_ACTIONS = {"Add": "written", "Update": "edited", "Delete": "deleted"}
_CODEX_EXIT = re.compile(r"^(?:Process exited with code|Exit code:) (-?\d+)\s*$", re.M)
_LEADING_EXIT = re.compile(r"\AExit code:? (-?\d+)[ \t]*(?:\n|\Z)")


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a call ended, read off its result: the exit code when the result names one,
    whether it failed, and the last non-empty line of its output."""

    exit_code: int | None
    failed: bool
    last_line: str


def seed_state(
    state: Json, messages: Sequence[Message], schema: StateSchema, *, window: range | None = None
) -> Json:
    """``state`` with its holes filled from the tool calls in ``messages[window]`` (all of them
    when ``window`` is ``None``); results are looked up anywhere after the window's start.

    Adds, for keys the schema has: ``files`` entries (path -> what was done there, e.g.
    ``read, edited``) for paths Σ does not hold; ``errors_tried`` entries for failed calls, keyed
    by a slug of the command; ``step``, the number of assistant turns in ``messages``, when Σ
    has none. Nothing Σ holds is changed. The additions go through ``apply_patch``, so Σ stays
    within the schema and its bounds: when they would not fit, ``state`` comes back as it was.
    The input is never mutated.
    """
    calls = [p for m in _window(messages, window) for p in m.parts if isinstance(p, ToolCall)]
    answers = messages if window is None else messages[window.start :]  # results follow calls
    results = {p.call_id: p for m in answers for p in m.parts if isinstance(p, ToolResult)}
    patch: Json = {}
    files = _holes(state, schema, "files", _files(calls), MAX_SEEDED_FILES)
    if files:
        patch["files"] = files
    errors = _holes(state, schema, "errors_tried", _errors(calls, results), MAX_SEEDED_ERRORS)
    if errors:
        patch["errors_tried"] = errors
    if "step" not in state and _allows(schema, "step", JsonKind.INTEGER):
        patch["step"] = assistant_turns(messages)
    if not patch:
        return state
    outcome = apply_patch(schema, state, patch)
    return outcome.state if outcome.accepted else state


def seed_finished(
    state: Json,
    step: int,
    model_keys: Sequence[str],
    messages: Sequence[Message],
    schema: StateSchema,
    *,
    start: int = 0,
    answered: bool,
) -> tuple[Json, int]:
    """Σ and the session's step once a request of ``messages`` (its window from ``start``) is
    answered (``answered``: by an assistant reply): ``seed_state`` over the window and, until
    the model writes Σ's ``step`` (it is not in ``model_keys``), the step both in Σ and in the
    session: the model turns so far, the reply included. The same number in both, also after
    a retried request or a rewound history."""
    seeded = seed_state(state, messages, schema, window=range(start, len(messages)))
    if schema.shape("step") is not None and "step" not in model_keys:
        step = assistant_turns(messages)
        if answered and (not messages or messages[-1].role != "assistant"):
            step += 1  # the reply is a turn of its own
        seeded = {**seeded, "step": step}
    return seeded, step


def assistant_turns(messages: Sequence[Message]) -> int:
    """How many model turns ``messages`` hold: runs of consecutive assistant messages (one
    turn may be several messages on wires that split it). A re-sent history's count is
    taken up where it was left (``PrefixMemo``)."""
    found = _counted_turns.find(messages)
    done, turns = (0, 0) if found is None else found
    previous = messages[done - 1].role if done else None
    for message in messages[done:]:
        if message.role == "assistant" and previous != "assistant":
            turns += 1
        previous = message.role
    if len(messages) > done:
        _counted_turns.keep(messages, turns)
    return turns


_counted_turns: PrefixMemo[int] = PrefixMemo()


def file_actions(calls: Sequence[ToolCall]) -> dict[str, str]:
    """Path -> what ``calls`` did there (``read, edited``), in order of first appearance, read
    the way the seed reads them (see the module docstring)."""
    return _files(calls)


def shell_command(call: ToolCall) -> str | None:
    """The shell text ``call`` ran, when it is a command call of a known agent host."""
    return _command(call) if call.name.lower() in _SHELL_TOOLS else None


def _window(messages: Sequence[Message], window: range | None) -> Sequence[Message]:
    return messages if window is None else messages[window.start : window.stop]


def _allows(schema: StateSchema, key: str, kind: JsonKind) -> bool:
    """Whether the schema has ``key`` and a value of ``kind`` fits it (declared or inferred)."""
    shape = schema.shape(key)
    return shape is not None and (shape.kind is None or fits(shape.kind, kind))


def _holes(
    state: Json, schema: StateSchema, key: str, found: dict[str, str], limit: int
) -> dict[str, str]:
    """The entries of ``found`` that ``state[key]`` lacks, the newest ``limit`` of them;
    nothing when the schema has no such key or Σ holds something other than an object."""
    if not found or not _allows(schema, key, JsonKind.OBJECT):
        return {}
    held = state.get(key, {})
    if not isinstance(held, dict):
        return {}
    longest = schema.bounds.max_key_length
    fresh = {
        name: text
        for name, text in found.items()
        if name not in held and name not in RESERVED_KEYS and 0 < len(name) <= longest
    }
    return dict(list(fresh.items())[-limit:])


# Files -------------------------------------------------------------------------------------


def _files(calls: Sequence[ToolCall]) -> dict[str, str]:
    """Path -> the actions on it in order (``read, edited``), in order of first appearance."""
    actions: dict[str, list[str]] = {}
    for call in calls:
        for path, action in _file_actions(call):
            done = actions.setdefault(path, [])
            if action not in done:
                done.append(action)
    return {path: ", ".join(done) for path, done in actions.items()}


def _file_actions(call: ToolCall) -> Iterator[tuple[str, str]]:
    name = call.name.lower()
    if name in _PATCH_TOOLS:
        yield from _patch_paths(_patch_text(call))
    elif name in _FILE_TOOLS:
        path = _first_str(_arguments(call), _PATH_KEYS)
        if path:
            yield path, _FILE_TOOLS[name]
    elif name in _SHELL_TOOLS:
        command = _command(call)
        if command is not None:
            yield from _patch_paths(command)
            yield from _shell_paths(command)


def _patch_text(call: ToolCall) -> str:
    """The patch of an ``apply_patch`` call: the freeform input itself, or the string
    argument holding it when the tool takes JSON arguments."""
    arguments = _arguments(call)
    for value in (arguments or {}).values():
        if isinstance(value, str) and "*** Begin Patch" in value:
            return value
    return call.arguments


def _patch_paths(text: str) -> Iterator[tuple[str, str]]:
    """The paths an ``apply_patch`` envelope touches (``*** Begin Patch`` format)."""
    if "*** Begin Patch" not in text:
        return
    for match in _PATCH_LINE.finditer(text):
        if match.group(3):
            yield match.group(3).strip(), "written"
        else:
            yield match.group(2).strip(), _PATCH_ACTIONS[match.group(1)]


def _shell_paths(command: str) -> Iterator[tuple[str, str]]:
    """Files a simple command reads (or ``sed -i`` edits): one program, at most piped into
    others, no redirection, chaining or substitution (whose paths cannot be told safely)."""
    words = _words(command)
    if not words:
        return
    program = words[0].rsplit("/", 1)[-1]
    if program == "sed":
        yield from _sed_paths(words[1:])
        return
    if program not in _READERS:
        return
    skip = False
    for word in words[1:]:
        if skip:
            skip = False
        elif word in _OPTION_VALUES:
            skip = True
        elif not word.startswith("-"):
            yield word, "read"


def _sed_paths(args: list[str]) -> Iterator[tuple[str, str]]:
    """The files of ``sed ARGS``: the operands after the script (the first operand, unless
    the script came with ``-e`` or ``-f``); ``-i`` means the files are edited in place."""
    edits = any(a.startswith(("-i", "--in-place")) for a in args)
    operands: list[str] = []
    scripted = skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("-e", "-f", "--expression", "--file", "-l"):
            skip, scripted = True, scripted or arg != "-l"
        elif not arg.startswith("-"):
            operands.append(arg)
    for path in operands if scripted else operands[1:]:
        yield path, "edited" if edits else "read"


def _words(command: str) -> list[str]:
    """The words of the first command of a pipeline, or none for anything more complex."""
    if "$(" in command or "`" in command or "\n" in command.strip():
        return []
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return []
    operators = [t for t in tokens if _OPERATOR.match(t)]
    if any(op != "|" for op in operators):
        return []
    return tokens[: tokens.index("|")] if "|" in tokens else tokens


# Commands and errors -----------------------------------------------------------------------


def _errors(calls: Sequence[ToolCall], results: dict[str, ToolResult]) -> dict[str, str]:
    """Slug -> what failed, for every call whose result says it failed."""
    errors: dict[str, str] = {}
    for call in calls:
        result = results.get(call.id)
        if result is None:
            continue
        outcome = read_outcome(result)
        if not outcome.failed:
            continue
        command = _command(call) if call.name.lower() in _SHELL_TOOLS else None
        subject = command if command is not None else _subject(call)
        text = _error_text(subject, outcome, quoted=command is not None)
        slug = _slug(subject) or _slug(call.name) or "call"
        key, n = slug, 2
        while key in errors and errors[key] != text:
            key, n = f"{slug}-{n}", n + 1
        errors[key] = text
    return errors


def read_outcome(result: ToolResult) -> Outcome:
    """How the call behind ``result`` ended (see the module docstring for what is read).

    Only the head (for the exit code) and the tail (for the last line) of the output are
    read: the seed runs on the event loop, and one output may be megabytes long."""
    text = "\n".join(item.text for item in result.content if isinstance(item, Text))
    code: int | None = None
    marker = text.find(_OUTPUT, 0, _HEAD_CHARS)
    if marker >= 0:
        match = _CODEX_EXIT.search(text, 0, marker)
        code = int(match.group(1)) if match else None
        start = marker + len(_OUTPUT)
    else:
        leading = _LEADING_EXIT.match(text)
        code, start = (int(leading.group(1)), leading.end()) if leading else (None, 0)
    failed = result.is_error or (code is not None and code != 0)
    return Outcome(code, failed, _last_line(text[max(start, len(text) - _TAIL_CHARS) :]))


def _error_text(subject: str, outcome: Outcome, *, quoted: bool) -> str:
    what = f"`{_cut(subject, 80)}`" if quoted else _cut(subject, 80)
    ended = (
        f"exited with code {outcome.exit_code}" if outcome.exit_code not in (None, 0) else "failed"
    )
    return f"{what} {ended}: {outcome.last_line}" if outcome.last_line else f"{what} {ended}"


def _subject(call: ToolCall) -> str:
    """A short name for a call that is not a command: the tool and the path it targets."""
    path = _first_str(_arguments(call), _PATH_KEYS)
    return f"{call.name} {path}" if path else call.name


def _command(call: ToolCall) -> str | None:
    """The shell text of a command call: ``cmd``, or ``command`` as a string or an argv
    (``["bash", "-lc", script]`` gives the script)."""
    arguments = _arguments(call)
    if arguments is None:
        return None
    value = arguments.get("cmd", arguments.get("command"))
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        if len(value) == 3 and value[1] in ("-lc", "-c") and value[0].endswith("sh"):
            return str(value[2])
        return shlex.join(value)
    return None


def _arguments(call: ToolCall) -> Json | None:
    try:
        value = jsonio.loads(call.arguments) if call.arguments.strip() else {}
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _first_str(arguments: Json | None, keys: Sequence[str]) -> str | None:
    if arguments is None:
        return None
    for key in keys:
        value: Any = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _last_line(text: str) -> str:
    for line in reversed(text.splitlines()):
        if line.strip():
            return _cut(" ".join(line.split()), LINE_CHARS)
    return ""


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40].strip("-")
