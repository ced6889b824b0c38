"""A ``Reply`` resolved against the request it answers: every id, count and piece the wire
builders need, derived deterministically so repeated runs send identical bytes.

Token counts are an estimate, not a tokenizer: ``ceil(utf-8 bytes / 4)`` of the text, and for the
prompt, of the compact JSON of the fields that carry it (see ``prompt_tokens``). That is enough to
see a gateway shrink a prompt, and it never changes under a test.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from skillstate.conversation import Usage, Wire
from skillstate.support import jsonio
from skillstate.testing.recording import RecordedRequest
from skillstate.testing.replies import Reply, ScriptedError, Stop

#: Creation time of every object the fake makes (2026-01-01T00:00:00Z), fixed so bodies are
#: reproducible.
CREATED = 1_767_225_600
CREATED_ISO = "2026-01-01T00:00:00Z"

#: The request fields that make up the prompt on each wire, in the order they are counted.
PROMPT_FIELDS: Mapping[Wire, tuple[str, ...]] = {
    Wire.CHAT: ("messages", "tools", "functions"),
    Wire.RESPONSES: ("instructions", "input", "tools"),
    Wire.MESSAGES: ("system", "messages", "tools"),
}

_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_WORDS = re.compile(r"\s*\S+\s*|\s+")
_JSON_PIECE = 12


def estimate_tokens(text: str) -> int:
    """About four UTF-8 bytes a token, rounded up."""
    return math.ceil(len(text.encode()) / 4)


def prompt_tokens(wire: Wire, body: Mapping[str, Any]) -> int:
    """The estimated prompt size of a request: the compact JSON of its prompt fields."""
    prompt = {name: body[name] for name in PROMPT_FIELDS[wire] if name in body}
    return estimate_tokens(jsonio.dumps_str(prompt))


def make_id(prefix: str, seed: str, length: int, *, base62: bool = False) -> str:
    """``prefix`` and ``length`` characters derived from ``seed`` (hex, or base62 as Anthropic
    ids are)."""
    digest = hashlib.sha256(seed.encode()).digest() * 2
    if base62:
        return prefix + "".join(_BASE62[byte % 62] for byte in digest[:length])
    return prefix + digest.hex()[:length]


def text_pieces(text: str) -> list[str]:
    """``text`` split into word-sized deltas whose concatenation is exactly ``text``."""
    return _WORDS.findall(text)


def json_pieces(arguments: str) -> list[str]:
    """Argument JSON split into short fragments, as providers stream partial JSON."""
    return [arguments[i : i + _JSON_PIECE] for i in range(0, len(arguments), _JSON_PIECE)]


@dataclass(frozen=True, slots=True)
class ResolvedCall:
    """A tool call with its ids: ``id`` is the call id the client answers to; ``item_id`` is the
    Responses output item id (``fc_…``), unused elsewhere."""

    id: str
    item_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Outcome:
    """Everything one answer says, wire-neutral. ``body`` is the request's JSON object."""

    wire: Wire
    id: str
    model: str
    body: Mapping[str, Any]
    text: str
    message_id: str
    reasoning: str | None
    reasoning_id: str
    signature: str
    calls: tuple[ResolvedCall, ...]
    stop: Stop
    usage: Usage
    error: ScriptedError | None
    cache_write_1h: int = 0
    """Of ``usage.cache_write``, the tokens written with the 1-hour TTL (billing mode)."""
    reported: bool = True
    """Whether the answer carries its usage (``Reply.usage``)."""


def resolve(reply: Reply, request: RecordedRequest) -> Outcome:
    """Fix the ids, stop reason and usage of ``reply`` for ``request`` (a JSON-object body on a
    model route)."""
    wire = request.wire
    if wire is None or not isinstance(request.json, dict):
        raise ValueError("resolve needs a JSON request on a model route")
    seed = f"{wire}:{request.index}"
    calls = tuple(
        _call(wire, seed, i, call.name, call.arguments, call.id)
        for i, call in enumerate(reply.calls)
    )
    return Outcome(
        wire=wire,
        id=_response_id(wire, seed),
        model=request.model or "",
        body=request.json,
        text=reply.text,
        message_id=make_id("msg_", seed + ":message", 48),
        reasoning=reply.reasoning,
        reasoning_id=make_id("rs_", seed + ":reasoning", 48),
        signature=base64.b64encode(hashlib.sha256((seed + ":sig").encode()).digest()).decode(),
        calls=calls,
        stop=reply.stop_reason,
        usage=_usage(reply, wire, request.json, calls),
        error=reply.error,
        reported=reply.usage,
    )


def _response_id(wire: Wire, seed: str) -> str:
    if wire is Wire.CHAT:
        return make_id("chatcmpl-", seed, 29, base62=True)
    if wire is Wire.RESPONSES:
        return make_id("resp_", seed, 48)
    return make_id("msg_01", seed, 22, base62=True)


def _call(
    wire: Wire, seed: str, index: int, name: str, arguments: Mapping[str, Any], given: str | None
) -> ResolvedCall:
    call_seed = f"{seed}:call:{index}"
    if given is not None:
        call_id = given
    elif wire is Wire.MESSAGES:
        call_id = make_id("toolu_01", call_seed, 22, base62=True)
    else:
        call_id = make_id("call_", call_seed, 24, base62=True)
    item_id = make_id("fc_", call_seed, 48)
    return ResolvedCall(call_id, item_id, name, jsonio.dumps_str(dict(arguments)))


def _usage(
    reply: Reply, wire: Wire, body: Mapping[str, Any], calls: tuple[ResolvedCall, ...]
) -> Usage:
    prompt = reply.input_tokens if reply.input_tokens is not None else prompt_tokens(wire, body)
    thinking = estimate_tokens(reply.reasoning or "")
    if reply.output_tokens is not None:
        output = reply.output_tokens
    else:
        written = reply.text + "".join(call.name + call.arguments for call in calls)
        output = estimate_tokens(written) + thinking
    return Usage(
        input=prompt,
        output=output,
        cached_input=reply.cached_tokens,
        cache_write=reply.cache_write_tokens,
        reasoning=min(thinking, output),
    )
