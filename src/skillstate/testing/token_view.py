"""The token view of a request: the prompt as a provider's prefix cache sees it, read from the
raw request JSON the scripted upstream received (never through ``skillstate.protocols``, so a
test of the gateway's accounting is not checked against the gateway's own reading).

The contract (``token_view``): the request is flattened, in order, into **blocks**, each encoded
on its own with o200k_base (special-token strings count as ordinary text), and the blocks'
tokens are concatenated:

1. each tool definition, as its compact JSON (``tools``, and Chat's legacy ``functions``);
2. the system prompt: Responses' ``instructions``; Anthropic's ``system``, a string (one block)
   or one block per text block (Chat's system messages are ordinary messages, in their place);
3. each message or input item, in order: its role's name (framing, in no block of its own: it
   is counted at the start of the message's first block), then one block per content part —
   text for a text part, name then arguments for a tool call (Chat's ``tool_calls`` and
   ``function_call``, Responses' ``function_call``, Anthropic's ``tool_use`` with its input as
   compact JSON), the result's text for a tool result (``tool`` messages, ``function_call_output``,
   ``tool_result`` with its content's parts in order), the thinking text or reasoning summary,
   ``IMAGE_TOKENS`` tokens for an image, and the compact JSON of anything else.

``cache_control`` is never part of a block's tokens, so moving a breakpoint leaves the tokens as
they were. Each tool, system block and message content block that carries a top-level
``cache_control`` is a **breakpoint** at the token offset where that block ends, with a TTL of
one hour for ``"ttl": "1h"`` and five minutes otherwise.

What it simplifies: the chat template's special tokens are not modelled (only the role's name
frames a message); every image counts ``IMAGE_TOKENS`` whatever its size; context a provider
adds on its own (a Responses ``previous_response_id`` conversation, a tool-use system prompt)
is not counted; ``cache_control`` nested inside a ``tool_result``'s content is not a
breakpoint.
"""

from __future__ import annotations

import functools
import hashlib
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from skillstate.conversation import Wire
from skillstate.economics.tokenizer import encoding
from skillstate.support import jsonio

FIVE_MINUTES = 300.0
ONE_HOUR = 3600.0

IMAGE_TOKENS = 765
"""What one image counts: a 1024 x 1024 image at OpenAI's high detail (85 + 4 tiles x 170).
Its tokens are derived from a digest of the image's JSON, so a different image is a different
prefix."""

_TEXT_TYPES = frozenset({"text", "input_text", "output_text"})
_IMAGE_TYPES = frozenset({"image", "image_url", "input_image"})
_VOCABULARY = 199_998
"""Image tokens are drawn below o200k_base's special tokens."""


@dataclass(frozen=True, slots=True)
class Breakpoint:
    """A ``cache_control`` mark: it closes block ``block``, whose last token ends at offset
    ``end``; ``ttl`` is in seconds."""

    block: int
    end: int
    ttl: float


@dataclass(frozen=True, slots=True)
class TokenView:
    """A request's prompt tokens; ``ends[i]`` is the offset where block ``i`` ends (ascending,
    the last one ``len(tokens)``); ``breakpoints`` in the order of their blocks."""

    tokens: tuple[int, ...]
    ends: tuple[int, ...] = ()
    breakpoints: tuple[Breakpoint, ...] = ()

    def __len__(self) -> int:
        return len(self.tokens)


def token_view(wire: Wire, body: Mapping[str, Any]) -> TokenView:
    """The token view of a request on ``wire`` (see the module docstring for the order)."""
    builder = _Builder()
    for tool in [*_items(body.get("tools")), *_items(body.get("functions"))]:
        builder.block(_encode(jsonio.dumps_str(_unmarked(tool))), tool)
    if wire is Wire.RESPONSES:
        _responses(builder, body)
    elif wire is Wire.MESSAGES:
        _messages(builder, body)
    else:
        _chat(builder, body)
    return builder.view()


@dataclass(slots=True)
class _Builder:
    tokens: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    breakpoints: list[Breakpoint] = field(default_factory=list)

    def frame(self, text: str) -> None:
        self.tokens.extend(_encode(text))

    def block(self, tokens: Iterable[int], source: Any = None) -> None:
        self.tokens.extend(tokens)
        self.ends.append(len(self.tokens))
        ttl = _ttl(source)
        if ttl is not None:
            self.breakpoints.append(Breakpoint(len(self.ends) - 1, len(self.tokens), ttl))

    def content(self, content: Any) -> None:
        """A message's content: a string is one block, a list one block per part."""
        if isinstance(content, list):
            for part in content:
                self.block(_part(part), part)
        elif content is not None:
            self.block(_part(content))

    def view(self) -> TokenView:
        return TokenView(tuple(self.tokens), tuple(self.ends), tuple(self.breakpoints))


def _chat(builder: _Builder, body: Mapping[str, Any]) -> None:
    for message in _items(body.get("messages")):
        builder.frame(str(message.get("role", "")))
        builder.content(message.get("content"))
        for call in _items(message.get("tool_calls")):
            builder.block(_call(call.get("function")))
        if "function_call" in message:
            builder.block(_call(message["function_call"]))


def _responses(builder: _Builder, body: Mapping[str, Any]) -> None:
    instructions = body.get("instructions")
    if isinstance(instructions, str):
        builder.block(_encode(instructions))
    items = body.get("input")
    if isinstance(items, str):
        builder.frame("user")
        builder.block(_encode(items))
        return
    for item in _items(items):
        kind = item.get("type", "message")
        if kind == "message" or "role" in item:
            builder.frame(str(item.get("role", "")))
            builder.content(item.get("content"))
        elif kind == "function_call":
            builder.block(_call(item))
        elif kind == "function_call_output":
            builder.block(_result(item.get("output")))
        elif kind == "reasoning":
            summaries = _items(item.get("summary"))
            builder.block(_result([part.get("text", "") for part in summaries]))
        else:
            builder.block(_part(item), item)


def _messages(builder: _Builder, body: Mapping[str, Any]) -> None:
    system = body.get("system")
    if isinstance(system, list):
        for part in system:
            builder.block(_part(part), part)
    elif isinstance(system, str):
        builder.block(_encode(system))
    for message in _items(body.get("messages")):
        builder.frame(str(message.get("role", "")))
        builder.content(message.get("content"))


def _part(part: Any) -> list[int]:
    """The tokens of one content part (any wire's shape)."""
    if isinstance(part, str):
        return list(_encode(part))
    if not isinstance(part, dict):
        return list(_encode(jsonio.dumps_str(part)))
    kind = part.get("type")
    if kind in _TEXT_TYPES and isinstance(part.get("text"), str):
        return list(_encode(part["text"]))
    if kind in _IMAGE_TYPES:
        return _image(part)
    if kind == "tool_use":
        return [*_encode(str(part.get("name", ""))), *_encode(jsonio.dumps_str(part.get("input")))]
    if kind == "tool_result":
        return _result(part.get("content"))
    if kind == "thinking" and isinstance(part.get("thinking"), str):
        return list(_encode(part["thinking"]))
    return list(_encode(jsonio.dumps_str(_unmarked(part))))


def _call(function: Any) -> list[int]:
    """A tool call's name, then its arguments (a string of JSON on OpenAI's wires)."""
    if not isinstance(function, dict):
        return []
    arguments = function.get("arguments", "")
    text = arguments if isinstance(arguments, str) else jsonio.dumps_str(arguments)
    return [*_encode(str(function.get("name", ""))), *_encode(text)]


def _result(content: Any) -> list[int]:
    """A tool result's content: a string, or its parts in order."""
    if isinstance(content, list):
        return [token for part in content for token in _part(part)]
    return _part(content) if content is not None else []


def _image(part: Mapping[str, Any]) -> list[int]:
    seed = jsonio.dumps(_unmarked(part))
    raw = array("I", hashlib.shake_128(seed).digest(4 * IMAGE_TOKENS))
    return [value % _VOCABULARY for value in raw]


def _ttl(source: Any) -> float | None:
    mark = source.get("cache_control") if isinstance(source, dict) else None
    if not isinstance(mark, dict):
        return None
    return ONE_HOUR if mark.get("ttl") == "1h" else FIVE_MINUTES


def _unmarked(part: Any) -> Any:
    if isinstance(part, dict) and "cache_control" in part:
        return {key: value for key, value in part.items() if key != "cache_control"}
    return part


def _items(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


@functools.lru_cache(maxsize=8192)
def _encode(text: str) -> tuple[int, ...]:
    """o200k_base tokens of ``text``, kept by content: a history is re-sent on every request,
    so almost every block is encoded once."""
    return tuple(encoding().encode_ordinary(text))
