"""Host compaction: a client asks to compact its history, and the gateway answers from Σ.

Each agent host asks in its own way (seen in Claude Code 2.1.197, Codex 0.171, OpenCode
1.18.33; ``tests/fixtures/compaction`` holds the shapes):

* Claude Code (``/compact``, auto-compact): an ordinary request whose last user message ends
  with its summarization prompt ("Your task is to create a detailed summary of the
  conversation so far" — or "of the RECENT portion", or "of this conversation" for a partial
  compaction — with the ``<summary>`` layout it wants back). It reads the text inside
  ``<summary>`` tags.
* Codex with a provider of its own (``model_providers.*``): an ordinary request, no tools, whose
  last user item is "You are performing a CONTEXT CHECKPOINT COMPACTION..."; it keeps the
  reply's text as the summary. A ``compact_prompt`` of the user's own is not recognised.
* Codex with OpenAI's provider: a ``compaction_trigger`` input item instead (remote
  compaction, see ``protocols.openai_responses.compaction``).
* OpenCode (session compaction): no tools, one user message holding the conversation flattened
  inside ``<conversation>`` tags and "Create a new anchored summary..." (or a
  ``<prior-summary>`` to merge with).

``compact_summary`` is the answer: Σ rendered section by section, then the deterministic sweep
of the transcript (``state.sweep``), within ``MAX_SUMMARY_CHARS``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from skillstate.conversation.model import Json, Message, Request, Text
from skillstate.protocols.openai_responses.compaction import ITEM, is_trigger
from skillstate.state.schema import StateSchema
from skillstate.state.sweep import Command, Sweep, flattened_transcript, sweep

MAX_SUMMARY_CHARS = 32_000
"""The longest summary, in characters (about 8,000 tokens): it becomes the client's history."""

MAX_INSTRUCTIONS = 12
"""The most user instructions quoted: the first one, and the newest after it."""

INSTRUCTION_CHARS = 4_000
MAX_COMMANDS = 24
MAX_SWEPT_FILES = 40
LAST_TEXT_CHARS = 4_000
COMMAND_CHARS = 160

_CLAUDE_CODE = ("create a detailed summary of", "<summary>")
_CODEX = "You are performing a CONTEXT CHECKPOINT COMPACTION"
_OPENCODE = ("Create a new anchored summary", "<prior-summary>")

TITLES = {
    "objective": "Objective",
    "plan": "Plan",
    "done": "Done",
    "findings": "Findings",
    "files": "Files",
    "decisions": "Decisions",
    "errors_tried": "Errors tried",
    "working": "Working",
    "open": "Open questions",
    "step": "Step",
}


class Compaction(StrEnum):
    """Which host asked to compact, by the shape of its request."""

    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    CODEX_REMOTE = "codex-remote"
    OPENCODE = "opencode"


def compaction_of(request: Request) -> Compaction | None:
    """The kind of compaction ``request`` asks for, or None for any other request. Only the
    last message is read: it must be the user's, holding the host's prompt (or trigger)."""
    if not request.messages or request.messages[-1].role != "user":
        return None
    parts = request.messages[-1].parts
    if parts and is_trigger(parts[-1]):
        return Compaction.CODEX_REMOTE
    text = "\n".join(p.text for p in parts if isinstance(p, Text))
    if all(phrase in text for phrase in _CLAUDE_CODE):
        return Compaction.CLAUDE_CODE
    if text.lstrip().startswith(_CODEX):
        return Compaction.CODEX
    if "<conversation>" in text and any(phrase in text for phrase in _OPENCODE):
        return Compaction.OPENCODE
    return None


MARKS = (
    _CLAUDE_CODE[0].encode(),
    _CODEX.encode(),
    *(phrase.strip("<>").encode() for phrase in _OPENCODE),
    ITEM.encode(),  # Codex's compaction trigger, and the compaction items it sends back
)
"""What a request's bytes hold wherever ``compaction_of`` finds a host's compaction or the
history holds a compaction item: letters, spaces and hyphens, which JSON never escapes."""


def may_compact(raw: bytes) -> bool:
    """Whether the request whose body is ``raw`` may ask for a compaction or hold a compaction
    item; False only where neither can be there. One search of the bytes per mark."""
    return any(mark in raw for mark in MARKS)


def is_compaction(request: Request) -> bool:
    """Whether ``request`` is a host's request to compact its history."""
    return compaction_of(request) is not None


def transcript(request: Request, kind: Compaction) -> list[Message]:
    """The conversation a compaction request is about, without the request's own prompt."""
    *history, last = request.messages
    if kind is Compaction.OPENCODE:
        text = "\n".join(p.text for p in last.parts if isinstance(p, Text))
        return [*history, *flattened_transcript(text)]
    if kind is Compaction.CLAUDE_CODE:
        # The prompt shares its message with the last tool results; those stay.
        kept = [p for p in last.parts if not isinstance(p, Text) or _CLAUDE_CODE[0] not in p.text]
        return [*history, dataclasses.replace(last, parts=kept)] if kept else history
    return history


def state_has_content(state: Json) -> bool:
    """Whether Σ holds anything to summarise (a step count alone is not content)."""
    return any(value not in ({}, [], "", None) for key, value in state.items() if key != "step")


def compact_summary(state: Json, messages: Sequence[Message], schema: StateSchema) -> str:
    """A readable summary of the session: Σ's keys in schema order, each a Markdown section
    (the plan with each step's status), then what the sweep of ``messages`` found — the user's
    instructions verbatim, the commands run with how they ended, the files touched that Σ
    does not list, the assistant's last text. Deterministic; at most ``MAX_SUMMARY_CHARS``, cut
    from the end (Σ comes first, so the sweep gives way before it does)."""
    head = "Session summary kept by the skillstate gateway: the session state, then the transcript."
    sections = [head, *_state_sections(state, schema), *_sweep_sections(sweep(messages), state)]
    return _cut("\n\n".join(sections), MAX_SUMMARY_CHARS)


# Σ -----------------------------------------------------------------------------------------


def _state_sections(state: Json, schema: StateSchema) -> list[str]:
    order = [k for k in schema.keys if k in state] + [k for k in state if k not in schema.keys]
    sections = []
    for key in order:
        if key == "step" and not state[key]:
            continue  # the seed's count before the first model turn says nothing
        body = _render(key, state[key])
        if body:
            title = TITLES.get(key, key.replace("_", " ").capitalize())
            sections.append(f"## {title}\n{body}")
    return sections


def _render(key: str, value: Any) -> str:
    if key == "plan" and isinstance(value, dict):
        return "\n".join(_plan_step(slug, step) for slug, step in value.items())
    if isinstance(value, dict):
        return "\n".join(_bullet(f"{name}: {_inline(item)}") for name, item in value.items())
    if isinstance(value, list):
        return "\n".join(_bullet(_inline(item)) for item in value)
    return _inline(value)


def _plan_step(slug: str, step: Any) -> str:
    if isinstance(step, dict) and isinstance(step.get("step"), str):
        status = step.get("status")
        mark = f"[{status}] " if isinstance(status, str) else ""
        return _bullet(f"{mark}{slug}: {step['step']}")
    return _bullet(f"{slug}: {_inline(step)}")


def _inline(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ", ".join(value)
    if isinstance(value, dict) and all(isinstance(v, str | list) for v in value.values()):
        return "; ".join(f"{k}: {_inline(v)}" for k, v in value.items())
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _bullet(text: str) -> str:
    """A list item; the lines after the first are indented under it."""
    return "- " + text.strip().replace("\n", "\n  ")


# The sweep ---------------------------------------------------------------------------------


def _sweep_sections(found: Sweep, state: Json) -> list[str]:
    sections = []
    instructions = list(found.instructions)
    if len(instructions) > MAX_INSTRUCTIONS:
        instructions = instructions[:1] + instructions[1 - MAX_INSTRUCTIONS :]
    if instructions:
        quoted = [_bullet(_cut(text, INSTRUCTION_CHARS)) for text in instructions]
        sections.append("## User instructions (verbatim)\n" + "\n".join(quoted))
    if found.commands:
        shown = [_command_line(c) for c in found.commands[-MAX_COMMANDS:]]
        earlier = len(found.commands) - len(shown)
        if earlier:
            shown.insert(0, f"- ({earlier} earlier commands not shown)")
        sections.append("## Commands run\n" + "\n".join(shown))
    held = state.get("files")
    held = held if isinstance(held, dict) else {}
    files = [(p, a) for p, a in found.files.items() if p not in held][-MAX_SWEPT_FILES:]
    if files:
        sections.append("## Files touched\n" + "\n".join(f"- {p}: {a}" for p, a in files))
    if found.last_text:
        sections.append("## Last assistant message\n" + _cut(found.last_text, LAST_TEXT_CHARS))
    return sections


def _command_line(command: Command) -> str:
    text = _cut(" ".join(command.text.split()), COMMAND_CHARS)
    outcome = command.outcome
    if outcome is None:
        ended = "no result"
    elif outcome.exit_code is not None:
        ended = f"exit {outcome.exit_code}"
    else:
        ended = "failed" if outcome.failed else "done"
    line = f"- `{text}` → {ended}"
    return f"{line}: {outcome.last_line}" if outcome and outcome.last_line else line


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    marker = f"\n[… cut at {limit:,} characters]"
    return text[: limit - len(marker)].rstrip() + marker
