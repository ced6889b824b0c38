"""Hybrid mode's rendering: the client's request with collapsed turns replaced by a Σ message.

Within an epoch (DESIGN.md, "Cache-stable rewriting: epochs") every outbound request is

    system · tools + internal tools · head · Σ message · tail (verbatim) · [tail note]

where the head, the Σ snapshot and the spans it replaced are fixed for the epoch and the tail
only grows. Everything here is a pure function of its inputs, down to the byte: the Σ message is
rebuilt on every request, so it must come out identical each time or the provider's prefix cache
misses from the Σ message on. Hence sorted keys, no clock, no ids, no set iteration.

Anthropic takes at most four explicit cache breakpoints per request. With ``cache_markers``
the Σ message, which ends the stable prefix, carries one where the client's markers leave
room or where one of them is covered by another; the client's marker on the newest message
never gives way (see ``_place_marker`` for the rule).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import orjson

from skillstate.conversation.model import (
    CacheMark,
    Image,
    Json,
    Message,
    Opaque,
    Part,
    Request,
    Text,
    Tool,
    ToolCall,
    ToolResult,
)
from skillstate.outputs.redaction import redact_json
from skillstate.state.schema import StateSchema
from skillstate.state.tools import RECALL_TOOL, SKILL_STATE_TOOL
from skillstate.support import jsonio

MAX_CACHE_BREAKPOINTS = 4
"""Anthropic's limit on ``cache_control`` breakpoints in one request (system, tools, messages)."""

MARK = CacheMark()
"""The breakpoint the gateway places on the Σ message: the provider's default lifetime."""

SUMMARY_CHARS = 100
"""The longest span summary shown in the Σ message header; a longer one is cut."""

NOTE_LABEL = "[skillstate]"
"""How the gateway's own messages begin, so the model tells them from the user's words."""


@dataclass(frozen=True, slots=True)
class SpanRef:
    """One collapsed span: the archive ``ref`` that holds it exactly, its ``first`` and
    ``last`` message as 1-based positions in the client's conversation, how many ``turns`` it
    held, and a one-line ``summary`` of what happened in it."""

    ref: str
    first: int
    last: int
    turns: int
    summary: str = ""


def state_json(value: Any) -> str:
    """Σ as compact JSON with sorted keys: the one spelling every request of an epoch shares.

    Integers beyond 64 bits (which orjson refuses) take the standard library's path; a given
    value always takes the same path, so the text is a function of the value.
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def shown_state(value: Any) -> str:
    """Σ (or a patch of it) as the model is shown it: ``state_json`` of the value with every
    secret in it replaced by a marker naming its kind (``redaction``): a key the model or the
    seed copied into Σ from a tool output is not sent back on every request. The stored Σ is
    left as it is; the same Σ always shows the same text (kept by that text: paper mode shows
    Σ whole on every request, and it changes far less often)."""
    return _shown(state_json(value))


@functools.lru_cache(maxsize=256)
def _shown(text: str) -> str:
    return state_json(redact_json(jsonio.loads(text))[0])


def sigma_message(
    snapshot: Json,
    spans: Sequence[SpanRef],
    schema: StateSchema,
    names: tuple[str, str] = (SKILL_STATE_TOOL, RECALL_TOOL),
) -> Message:
    """The Σ message that stands in for the collapsed spans: a short header naming what it
    replaced, where the exact originals are and how to use the internal tools (offered under
    ``names``: skill_state's, recall's), then Σ in a fenced ``json`` block."""
    skill_state, recall = names
    replaced = "; ".join(_span_text(span) for span in spans) or "no earlier messages"
    unset = [key for key in schema.keys if key not in snapshot]
    lines = [
        f"{NOTE_LABEL} Session state Σ, kept by the skillstate gateway in place of earlier "
        f"messages. Replaced: {replaced}.",
        f"`{recall}` fetches archived messages exactly, by `ref` or by `query`. "
        f"`{skill_state}` updates Σ with a JSON Merge Patch: null deletes a key; "
        "collections are objects keyed by short slugs.",
    ]
    if unset:
        lines.append("Not set yet: " + ", ".join(unset) + ".")
    text = "\n".join(lines) + "\n```json\n" + shown_state(snapshot) + "\n```"
    return Message("user", [Text(text)])


def _span_text(span: SpanRef) -> str:
    where = (
        f"messages {span.first}-{span.last}" if span.last > span.first else f"message {span.first}"
    )
    turns = "1 turn" if span.turns == 1 else f"{span.turns} turns"
    summary = _one_line(span.summary)
    detail = f"{turns}: {summary}" if summary else turns
    return f"{where} ({detail}), archived as `{span.ref}`"


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= SUMMARY_CHARS else line[: SUMMARY_CHARS - 1].rstrip() + "…"


def tail_note(
    changes: Json,
    *,
    nudge: str | None,
    state: Json | None = None,
    skill_state: str = SKILL_STATE_TOOL,
) -> Message | None:
    """The note after the verbatim turns: the Σ changes since the snapshot (a merge patch of
    the Σ message's state) and the stale nudge, either or both; ``None`` when neither.

    A request without a Σ message (before the first boundary) has no snapshot for changes to
    apply to: ``state`` is then Σ whole, shown in place of the changes, so that the model sees
    the state it is asked to update. An empty Σ is not shown, nor one holding nothing but
    ``step``: the seed keeps that count from the first request on, and it tells the model
    nothing its own turns do not. ``skill_state`` is the name that tool is offered under.
    """
    lines: list[str] = []
    if state and any(key != "step" for key in state):
        lines.append(
            f"The session state Σ so far (update it with `{skill_state}`: a JSON Merge "
            "Patch of what changed):\n```json\n" + shown_state(state) + "\n```"
        )
    elif changes:
        lines.append(
            "Σ changes since the state message (merge them into it):\n```json\n"
            + shown_state(changes)
            + "\n```"
        )
    if nudge and nudge.strip():
        lines.append(" ".join(nudge.split()))
    if not lines:
        return None
    return Message("user", [Text(f"{NOTE_LABEL} " + "\n".join(lines))])


def stale_nudge(steps: int, tool: str = SKILL_STATE_TOOL) -> str:
    """The one-line reminder sent when the model has not patched Σ for ``steps`` steps
    (``tool``: the name ``skill_state`` is offered under)."""
    return f"Σ has not been updated for {steps} steps: call {tool} with what you learned."


def render_hybrid(
    request: Request,
    *,
    head: range,
    tail: range,
    snapshot: Json,
    spans: Sequence[SpanRef],
    changes: Json,
    nudge: str | None,
    schema: StateSchema,
    internal_tools: list[Tool],
    cache_markers: bool,
) -> Request:
    """The outbound request of hybrid mode; ``request`` is left untouched.

    ``head`` and ``tail`` are the message ranges kept verbatim (from the collapse plan of the
    epoch); the messages between them are the collapsed ``spans``, replaced by the Σ message of
    ``snapshot``. Without spans nothing is collapsed, so the head and the tail must meet. The
    system prompt is the client's; the tools are the client's followed by ``internal_tools``,
    as offered: named by ``tools.internal_names``, so none takes a name the client's tools
    have (a client's own ``recall`` stays the client's). The tail note (see
    ``tail_note``) goes last, unless the conversation ends in an assistant message or with a
    tool call still waiting for its result (DESIGN.md, invariant 2). Without spans there is no
    Σ message: ``snapshot`` is then the current Σ, which the tail note shows whole, and there
    are no ``changes`` to show (giving some is an error). ``cache_markers``: put a
    breakpoint on the Σ message within ``MAX_CACHE_BREAKPOINTS`` (see ``_place_marker``).
    """
    _check_ranges(request.messages, head, tail, collapsed=bool(spans))
    _check_changes(changes, collapsed=bool(spans))
    names = (SKILL_STATE_TOOL, RECALL_TOOL)
    if len(internal_tools) == 2:  # as offered: renamed where the client has the name
        names = (internal_tools[0].name, internal_tools[1].name)
    system, tools = request.system, request.tools
    if spans:
        sigma = sigma_message(snapshot, spans, schema, names)
        messages = [*request.messages[head.start : head.stop], sigma]
        messages += request.messages[tail.start : tail.stop]
        if cache_markers:
            system, tools, messages = _place_marker(request, messages, sigma)
    else:
        messages = list(request.messages)
    shown = None if spans else snapshot
    note = tail_note(changes, nudge=nudge, state=shown, skill_state=names[0])
    if note is not None and _may_append(messages):
        messages.append(note)
    return replace(request, system=system, messages=messages, tools=[*tools, *internal_tools])


def _check_ranges(
    messages: Sequence[Message], head: range, tail: range, *, collapsed: bool
) -> None:
    """Refuse ranges that would drop messages no span names (DESIGN.md, invariant 4)."""
    valid = (
        head.step == 1
        and tail.step == 1
        and head.start == 0
        and head.stop <= tail.start
        and tail.stop == len(messages)
    )
    if not valid:
        raise ValueError(f"head {head} and tail {tail} do not split {len(messages)} messages")
    if not collapsed and head.stop != tail.start:
        raise ValueError(f"messages {head.stop}..{tail.start} are left out but no span names them")


def _check_changes(changes: Json, *, collapsed: bool) -> None:
    if changes and not collapsed:
        raise ValueError("Σ changes need a Σ message to apply to, and no span was collapsed")


def _may_append(messages: Sequence[Message]) -> bool:
    """Whether a note may follow the conversation: not after an assistant message (the model's
    turn is not done, or a prefill would be broken), and not while a call of the newest
    assistant message still waits for its result."""
    if not messages:
        return True
    if messages[-1].role == "assistant":
        return False
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "assistant":
            calls = {p.id for p in messages[i].parts if isinstance(p, ToolCall)}
            answered = {
                p.call_id for m in messages[i + 1 :] for p in m.parts if isinstance(p, ToolResult)
            }
            return calls <= answered
    return True


# Cache breakpoints -------------------------------------------------------------------------


def _place_marker(
    request: Request, messages: list[Message], sigma: Message
) -> tuple[list[Text], list[Tool], list[Message]]:
    """The system, tools and ``messages`` of ``request`` with the gateway's breakpoint on the
    Σ message's text, within ``MAX_CACHE_BREAKPOINTS``.

    The contract: the client's cache is never made worse. Anthropic caches in the order tools,
    system, messages, and a breakpoint caches everything before it, so a marker whose prefix a
    later marker also caches may go without losing a read while that later prefix is stable.
    The client's markers on system texts, tools and the messages sent are counted (those on
    collapsed messages are gone with them); then, first rule that applies:

    1. room for one more: Σ's is added, every client marker kept;
    2. the client already passes the limit: nothing is changed (the request is the client's);
    3. two or more markers on tools and system: the earliest of them goes (the later one
       caches its prefix, and tools and system do not change within a session) and Σ's is
       added;
    4. a client marker on the Σ message's position or after it (the tail, which only grows
       within an epoch; the newest message's marker is there): it already caches the prefix
       up to Σ, and the gateway adds none;
    5. otherwise every marker sits before Σ, most on head messages: the earliest message
       marker goes (a later head marker caches its prefix, and Σ's caches them all within
       the epoch) and Σ's is added.

    The client's marker on the newest message therefore always stays, and the prefix read
    with this placement is never shorter than with the client's own (a property test of
    ``tests/state/test_render_markers.py`` checks it against the simulated Anthropic cache).
    """
    system, tools = list(request.system), list(request.tools)
    index = next(i for i, m in enumerate(messages) if m is sigma)
    upper = sum(t.cache is not None for t in tools) + sum(t.cache is not None for t in system)
    count = upper + sum(_message_markers(m) for m in messages)
    if count > MAX_CACHE_BREAKPOINTS:
        return system, tools, messages
    if count == MAX_CACHE_BREAKPOINTS:
        if upper >= 2:
            system, tools = _drop_first_upper_marker(system, tools)
        elif any(_message_markers(m) for m in messages[index:]):
            return system, tools, messages
        else:
            trimmed = _drop_first_marker(messages)
            assert trimmed is not None  # four markers, at most one upper, none after Σ
            messages = trimmed
    parts: list[Part] = [
        replace(part, cache=MARK) if isinstance(part, Text) else part for part in sigma.parts
    ]
    messages[index] = replace(sigma, parts=parts)
    return system, tools, messages


def _drop_first_upper_marker(
    system: list[Text], tools: list[Tool]
) -> tuple[list[Text], list[Tool]]:
    """``system`` and ``tools`` without the earliest marker in the provider's cache order
    (tools, then system): new objects for the one changed."""
    for i, tool in enumerate(tools):
        if tool.cache is not None:
            return system, [*tools[:i], replace(tool, cache=None), *tools[i + 1 :]]
    for i, text in enumerate(system):
        if text.cache is not None:
            return [*system[:i], replace(text, cache=None), *system[i + 1 :]], tools
    return system, tools


def _message_markers(message: Message) -> int:
    count = 0
    for part in message.parts:
        if isinstance(part, Text | Image | ToolCall | ToolResult) and part.cache is not None:
            count += 1
        if isinstance(part, ToolResult):
            count += sum(_marked(item) for item in part.content)
    return count


def _marked(item: Text | Image | Opaque) -> bool:
    """Whether a tool result's item carries a cache marker the model names. A marker inside an
    ``Opaque`` item is the wire's JSON, which only the wire reads: it is not counted or moved."""
    return not isinstance(item, Opaque) and item.cache is not None


def _drop_first_marker(messages: list[Message]) -> list[Message] | None:
    """``messages`` without their earliest message-part marker (new objects on the way to
    it), or ``None`` when no message part has one."""
    for i, message in enumerate(messages):
        parts = _parts_without_first_marker(message.parts)
        if parts is not None:
            return [*messages[:i], replace(message, parts=parts), *messages[i + 1 :]]
    return None


def _parts_without_first_marker(parts: list[Part]) -> list[Part] | None:
    for j, part in enumerate(parts):
        changed: Part | None = None
        if isinstance(part, Text | Image | ToolCall | ToolResult) and part.cache is not None:
            changed = replace(part, cache=None)
        elif isinstance(part, ToolResult):
            content = _content_without_first_marker(part.content)
            changed = None if content is None else replace(part, content=content)
        if changed is not None:
            return [*parts[:j], changed, *parts[j + 1 :]]
    return None


def _content_without_first_marker(
    content: list[Text | Image | Opaque],
) -> list[Text | Image | Opaque] | None:
    for k, item in enumerate(content):
        if not isinstance(item, Opaque) and item.cache is not None:
            return [*content[:k], replace(item, cache=None), *content[k + 1 :]]
    return None
