"""The MCP tools over the archive and the state store: ``compress``, ``retrieve``, ``state``
and ``stats``. No MCP types here: each tool takes the call's arguments as a mapping and
returns a ``ToolAnswer`` (text, and whether it is an error result), which ``server`` turns
into the SDK's result.

``compress`` archives its content as one tool message holding one tool result
(``Message("tool", [ToolResult("mcp", [Text(content)])])``), the shape the ``outputs`` lane
archives a bulky tool output in: the content is what an agent got from a tool, and
``retrieve`` reads it back the way the gateway's ``recall`` does (``span_text``: a
``## 1 tool`` line, a ``[tool result id=mcp]`` line, then the content exactly).

Tools with a ``scope`` (a tenant's, ``storage.tenants``) see that tenant's sessions only: a
session it names is its own (``id`` is ``<tenant>/id``; another tenant's is refused as unknown,
whether it exists or not), a ref reads only when one of its own sessions archived it, and
``stats`` counts its own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from skillstate.archive import Archive, canonical_span, is_ref, ref_for, span_text
from skillstate.conversation import Message, Text, ToolResult
from skillstate.economics.tokenizer import count_tokens
from skillstate.outputs.redaction import redact, redact_json
from skillstate.outputs.views import render, view_of
from skillstate.state.internal import answer_skill_state
from skillstate.state.schema import StateSchema
from skillstate.storage.protocols import StateRecord, StateStore, StoreLimitError
from skillstate.storage.tenants import NAMED_RULE, named, owns, valid_named

DEFAULT_SESSION = "mcp"
"""The session ``compress`` files content under when the call names none."""

CALL_ID = "mcp"
"""The tool-result id of a span ``compress`` archived."""

MAX_CONTEXT = 20
"""The most lines of context ``retrieve`` shows around a matching line."""


@dataclass(frozen=True, slots=True)
class ToolAnswer:
    text: str
    is_error: bool = False


class ArgumentError(ValueError):
    """A call's arguments do not fit the tool's input schema; the message says how."""


TOOL_SCHEMAS: dict[str, tuple[str, dict[str, Any]]] = {
    "compress": (
        "Archive a long text (a log, a diff, a JSON document, any tool output) exactly, and "
        "get back a compact view of it and the archive ref that returns it whole (retrieve).",
        {
            "type": "object",
            "properties": {
                "content": {"type": "string", "description": "The text to archive."},
                "session": {
                    "type": "string",
                    "description": f"The session to file it under [{DEFAULT_SESSION}].",
                },
            },
            "required": ["content"],
            "additionalProperties": False,
        },
    ),
    "retrieve": (
        "The exact text archived under a ref, a page at a time (read on with the offset the "
        "page names), or with a query only its matching lines with context.",
        {
            "type": "object",
            "properties": {
                "ref": {"type": "string", "description": "An archive ref: ar_ and 24 hex."},
                "query": {"type": "string", "description": "Show only lines matching this."},
                "context": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": MAX_CONTEXT,
                    "description": "Lines shown around each match [2].",
                },
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Character to start the page at [0].",
                },
            },
            "required": ["ref"],
            "additionalProperties": False,
        },
    ),
    "state": (
        "A session's execution state Σ as JSON; with a patch (a JSON Merge Patch: objects "
        "merge, arrays replace, null deletes), apply it first and return the new Σ.",
        {
            "type": "object",
            "properties": {
                "session": {"type": "string", "description": "The session id."},
                "patch": {"type": "object", "description": "A merge patch of Σ."},
            },
            "required": ["session"],
            "additionalProperties": False,
        },
    ),
    "stats": (
        "What the gateway's stores hold: sessions with a state, archive entries and bytes.",
        {"type": "object", "properties": {}, "additionalProperties": False},
    ),
}
"""Each tool's description and input schema, by name."""


class McpTools:
    """The tools over one data directory's stores; ``budget_chars`` sizes a view."""

    def __init__(
        self,
        archive: Archive,
        state: StateStore,
        schema: StateSchema,
        *,
        budget_chars: int = 6000,
        degraded: str | None = None,
        scope: str | None = None,
    ) -> None:
        self.archive = archive
        self.state_store = state
        self.schema = schema
        self.budget_chars = budget_chars
        self.degraded = degraded
        self.scope = scope

    async def call(self, name: str, arguments: Mapping[str, Any] | None) -> ToolAnswer:
        """Answer one call; bad arguments and unknown names are error results, never
        exceptions (the model can correct itself)."""
        given = dict(arguments or {})
        try:
            if name == "compress":
                return await self.compress(given)
            if name == "retrieve":
                return await self.retrieve(given)
            if name == "state":
                return await self.state(given)
            if name == "stats":
                _only(given, set())
                return await self.stats()
        except (ArgumentError, StoreLimitError) as error:
            return ToolAnswer(f"{name}: {error}", is_error=True)
        return ToolAnswer(f"unknown tool {name!r} (tools: {', '.join(TOOL_SCHEMAS)})", True)

    async def compress(self, given: dict[str, Any]) -> ToolAnswer:
        _only(given, {"content", "session"})
        content = _string(given, "content", required=True)
        session = self._session(_string(given, "session") or DEFAULT_SESSION)
        data = canonical_span([Message("tool", [ToolResult(CALL_ID, [Text(content)])])])
        ref = ref_for(data)
        await self.archive.put(session, ref, data, summary="compressed through MCP")
        view = view_of(content, budget_chars=self.budget_chars)
        shown = redact(content if view is None else render(view, ref)).text
        answer = {
            "ref": ref,
            "session": session,
            "view": shown,
            "tokens_before": count_tokens(content),
            "tokens_after": count_tokens(shown),
        }
        return ToolAnswer(json.dumps(answer, ensure_ascii=False))

    async def retrieve(self, given: dict[str, Any]) -> ToolAnswer:
        _only(given, {"ref", "query", "context", "offset"})
        ref = _string(given, "ref", required=True)
        query = _string(given, "query")
        context = _integer(given, "context", 2, MAX_CONTEXT)
        offset = _integer(given, "offset", 0, None)
        if not is_ref(ref):
            return ToolAnswer(f"{ref[:80]!r} is not an archive ref (ar_ and 24 hex digits)", True)
        if not await self._owned(ref) or await self.archive.span(ref) is None:
            return ToolAnswer(f"no archived span {ref}: it is unknown, or expired", True)
        text = await self.archive.recall(ref, query, context=context, offset=offset)
        return ToolAnswer(text)

    async def read(self, ref: str) -> str | None:
        """The whole reading text of the span under ``ref``; None when unknown or expired
        (or not the scope's)."""
        messages = await self.archive.span(ref) if await self._owned(ref) else None
        return None if messages is None else span_text(messages)

    async def state(self, given: dict[str, Any]) -> ToolAnswer:
        _only(given, {"session", "patch"})
        session = _string(given, "session", required=True)
        if not session:
            raise ArgumentError("`session` must not be empty")
        session = self._session(session)
        patch = given.get("patch")
        if patch is None:
            return ToolAnswer(_state_json(session, await self.state_store.load(session)))
        if not isinstance(patch, dict):
            raise ArgumentError("`patch` must be an object (a JSON Merge Patch of Σ)")
        arguments = json.dumps({"patch": patch})
        result = await answer_skill_state(self.state_store, self.schema, session, arguments)
        if not result.applied or result.record is None:
            return ToolAnswer(result.text, is_error=True)
        return ToolAnswer(_state_json(session, result.record, note=result.text))

    async def stats(self) -> ToolAnswer:
        scope = self.scope
        sessions = [s for s in await self.state_store.list_sessions() if owns(scope, s.session)]
        names = {named(scope, DEFAULT_SESSION), *(info.session for info in sessions)}
        entries = [entry for name in sorted(names) for entry in await self.archive.entries(name)]
        answer: dict[str, Any] = {
            "sessions": len(sessions),
            "state_bytes": sum(info.state_bytes for info in sessions),
            "archive_entries": len(entries),
            "archive_refs": len({entry.ref for entry in entries}),
            "archive_bytes": sum(entry.size for entry in entries),
            "degraded": self.degraded,
        }
        return ToolAnswer(json.dumps(answer))

    def _session(self, text: str) -> str:
        """The session ``text`` names: for a scope, one of its own, or refused as unknown."""
        if self.scope is None:
            return text
        if not valid_named(text):
            raise ArgumentError(f"`session` must be {NAMED_RULE}")
        session = named(self.scope, text)
        if not owns(self.scope, session):
            raise ArgumentError(f"no session {text!r} here")
        return session

    async def _owned(self, ref: str) -> bool:
        """Whether ``ref`` is the scope's to read (any ref, without a scope)."""
        if self.scope is None:
            return True
        return any(owns(self.scope, session) for session in await self.archive.holders(ref))


def _state_json(session: str, record: StateRecord, note: str | None = None) -> str:
    """Σ as the model is shown it: secrets copied into it are redacted (``shown_state``)."""
    answer: dict[str, Any] = {
        "session": session,
        "version": record.version,
        "step": record.step,
        "state": redact_json(record.state)[0],
    }
    if note is not None:
        answer["note"] = note
    return json.dumps(answer, ensure_ascii=False)


def _only(given: Mapping[str, Any], allowed: set[str]) -> None:
    extra = sorted(set(given) - allowed)
    if extra:
        takes = ", ".join(f"`{name}`" for name in sorted(allowed)) or "no arguments"
        raise ArgumentError(f"takes {takes}; remove {', '.join(extra)}")


def _string(given: Mapping[str, Any], name: str, *, required: bool = False) -> str:
    value = given.get(name)
    if value is None:
        if required:
            raise ArgumentError(f"`{name}` is required")
        return ""
    if not isinstance(value, str):
        raise ArgumentError(f"`{name}` must be a string")
    return value


def _integer(given: Mapping[str, Any], name: str, default: int, most: int | None) -> int:
    value = given.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentError(f"`{name}` must be an integer")
    if value < 0 or (most is not None and value > most):
        bound = f"between 0 and {most}" if most is not None else "at least 0"
        raise ArgumentError(f"`{name}` must be {bound}")
    return value
