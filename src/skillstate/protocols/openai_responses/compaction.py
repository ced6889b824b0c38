"""Codex's remote compaction on the Responses wire, as the gateway answers it itself.

Codex (0.171) compacts remotely when its provider is OpenAI's (``openai_base_url`` pointed at
the gateway, or a provider of its own named ``OpenAI``): a streaming ``POST /v1/responses``
whose input ends with a ``{"type": "compaction_trigger"}`` item, answered by a stream holding
exactly one ``{"type": "compaction", "encrypted_content": ...}`` output item, then
``response.completed`` (codex-rs ``compact_remote_v2.rs``). Any other provider gets a local
compaction: an ordinary request with a checkpoint prompt (``state.compaction``).
Older Codex versions, and the public API, call ``POST /v1/responses/compact`` instead, whose
JSON reply is ``{"object": "response.compaction", "output": [user messages..., compaction
item], "usage": ...}`` (the openai SDK's ``CompactedResponse``).

The gateway's own compaction item carries the summary it wrote, readable: ``encrypted_content``
is ``OWN_PREFIX`` followed by the summary in URL-safe base64. The client sends the item back on
every later request; ``unwrap_summaries`` turns it into a user message holding the summary
before anything goes upstream, since no provider can read it. Items of any other origin
(OpenAI's real, encrypted ones) are left exactly as they are.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
from collections.abc import Sequence

from skillstate.conversation import Json, Message, Opaque, Part, Request, Text, Usage, Wire
from skillstate.protocols.openai_responses.usage import encode_usage

TRIGGER = "compaction_trigger"
ITEM = "compaction"
OWN_PREFIX = "skillstate-summary-v1:"
"""Marks a compaction item the gateway wrote; changing it orphans the items clients hold."""

SUMMARY_NOTE = (
    "Summary of the conversation so far, kept by the skillstate gateway (the exact earlier "
    "turns are in its archive):\n\n"
)
"""What heads the user message an unwrapped compaction item becomes."""


def is_trigger(part: Part) -> bool:
    """Whether ``part`` is Codex's request to compact (the last input item)."""
    return isinstance(part, Opaque) and part.wire is Wire.RESPONSES and _type(part) == TRIGGER


def compaction_id(token: str) -> str:
    """A compaction item id in this wire's shape, for an item the gateway writes itself."""
    return "cmp_" + token


def summary_item(summary: str, item_id: str) -> Json:
    """The compaction item holding ``summary``, as Codex stores and resends it."""
    encoded = base64.urlsafe_b64encode(summary.encode()).decode()
    return {"type": ITEM, "id": item_id, "encrypted_content": OWN_PREFIX + encoded}


def summary_part(summary: str, item_id: str) -> Opaque:
    """``summary_item`` as the output part of a canonical response."""
    return Opaque(Wire.RESPONSES, summary_item(summary, item_id), hints={"item": True})


def own_summary(part: Part) -> str | None:
    """The summary in a compaction item the gateway wrote, or None for any other part."""
    if not isinstance(part, Opaque) or part.wire is not Wire.RESPONSES or _type(part) != ITEM:
        return None
    content = part.data.get("encrypted_content")
    if not isinstance(content, str) or not content.startswith(OWN_PREFIX):
        return None
    try:
        return base64.urlsafe_b64decode(content[len(OWN_PREFIX) :]).decode()
    except (binascii.Error, ValueError):
        return None


def unwrap_summaries(request: Request) -> Request | None:
    """``request`` with each compaction item of the gateway's replaced by a user message that
    holds its summary (headed by ``SUMMARY_NOTE``); None when it holds none. Every request
    passes here, so the common case (no such item) only looks, and builds nothing."""
    if not any(isinstance(p, Opaque) for m in request.messages for p in m.parts):
        return None
    found = False
    messages: list[Message] = []
    for message in request.messages:
        parts: list[Part] = []
        for part in message.parts:
            summary = own_summary(part)
            if summary is None:
                parts.append(part)
                continue
            found = True
            if parts:
                messages.append(dataclasses.replace(message, parts=parts))
                parts = []
            messages.append(Message("user", [Text(SUMMARY_NOTE + summary)]))
        if parts or not message.parts:
            messages.append(dataclasses.replace(message, parts=parts))
    return dataclasses.replace(request, messages=messages) if found else None


def compacted_body(
    response_id: str, created: int, model: str, output: Sequence[Json], usage: Usage
) -> Json:
    """The JSON reply of ``POST /v1/responses/compact``."""
    return {
        "id": response_id,
        "object": "response.compaction",
        "created_at": created,
        "model": model,
        "output": list(output),
        "usage": encode_usage(usage),
    }


def user_items(body: Json) -> list[Json]:
    """The user message items of a request body's ``input``, exactly as sent: what a compacted
    history keeps besides the compaction item."""
    items = body.get("input")
    if isinstance(items, str):
        return [{"type": "message", "role": "user", "content": items}]
    if not isinstance(items, list):
        return []
    return [
        item
        for item in items
        if isinstance(item, dict)
        and item.get("role") == "user"
        and item.get("type", "message") == "message"
    ]


def _type(part: Opaque) -> object:
    return part.data.get("type")
