"""The billing mode's token view: the order a request is flattened in, on each wire, and where
its ``cache_control`` breakpoints fall."""

from __future__ import annotations

import json
from typing import Any

from skillstate.conversation import Wire
from skillstate.economics.tokenizer import encoding
from skillstate.testing.token_view import FIVE_MINUTES, IMAGE_TOKENS, ONE_HOUR, token_view

TOOL = {"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}
EPHEMERAL = {"type": "ephemeral"}


def tokens(*pieces: str) -> list[int]:
    """Each piece encoded on its own, as the view encodes each block."""
    return [token for piece in pieces for token in encoding().encode_ordinary(piece)]


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def test_chat_is_tools_then_messages_with_calls_and_results_in_order() -> None:
    body = {
        "model": "m",
        "tools": [TOOL],
        "messages": [
            {"role": "system", "content": "Be terse."},
            {"role": "user", "content": [{"type": "text", "text": "Read a.txt"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "read", "arguments": '{"path":"a.txt"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "hello from a"},
        ],
    }
    view = token_view(Wire.CHAT, body)
    assert list(view.tokens) == tokens(
        compact(TOOL),
        "system",
        "Be terse.",
        "user",
        "Read a.txt",
        "assistant",
        "read",
        '{"path":"a.txt"}',
        "tool",
        "hello from a",
    )
    assert len(view.ends) == 5  # the tool, three contents and the call
    assert view.ends[-1] == len(view)
    assert view.breakpoints == ()


def test_responses_is_tools_instructions_then_input_items() -> None:
    tool = {"type": "function", "name": "read", "parameters": {}}
    body = {
        "model": "m",
        "instructions": "Be terse.",
        "tools": [tool],
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "Read a.txt"}]},
            {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "hello from a"},
        ],
    }
    view = token_view(Wire.RESPONSES, body)
    assert list(view.tokens) == tokens(
        compact(tool), "Be terse.", "user", "Read a.txt", "read", "{}", "hello from a"
    )
    plain = token_view(Wire.RESPONSES, {"model": "m", "input": "hi"})
    assert list(plain.tokens) == tokens("user", "hi")


def test_messages_is_tools_system_then_blocks_and_leaves_cache_control_out() -> None:
    tool = {"name": "read", "input_schema": {"type": "object"}}
    body = {
        "model": "m",
        "max_tokens": 9,
        "tools": [{**tool, "cache_control": EPHEMERAL}],
        "system": [{"type": "text", "text": "Be terse.", "cache_control": EPHEMERAL}],
        "messages": [
            {"role": "user", "content": "Read a.txt"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Use the tool.", "signature": "s"},
                    {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": "hello"}],
                        "cache_control": {"type": "ephemeral", "ttl": "1h"},
                    }
                ],
            },
        ],
    }
    view = token_view(Wire.MESSAGES, body)
    pieces = [
        compact(tool),
        "Be terse.",
        "user",
        "Read a.txt",
        "assistant",
        "Use the tool.",
        "read",
        '{"path":"a"}',
        "user",
        "hello",
    ]
    assert list(view.tokens) == tokens(*pieces)
    ends = [(point.block, point.end, point.ttl) for point in view.breakpoints]
    assert ends == [
        (0, len(tokens(*pieces[:1])), FIVE_MINUTES),
        (1, len(tokens(*pieces[:2])), FIVE_MINUTES),
        (5, len(view), ONE_HOUR),
    ]


def test_moving_a_breakpoint_leaves_the_tokens_as_they_were() -> None:
    def body(marked: int) -> dict[str, Any]:
        blocks = [{"type": "text", "text": f"part {i}"} for i in range(3)]
        blocks[marked]["cache_control"] = EPHEMERAL
        return {"model": "m", "messages": [{"role": "user", "content": blocks}]}

    first, second = token_view(Wire.MESSAGES, body(0)), token_view(Wire.MESSAGES, body(2))
    assert first.tokens == second.tokens
    assert first.breakpoints[0].end < second.breakpoints[0].end == len(second)


def test_an_image_counts_a_fixed_figure_and_its_content_decides_its_tokens() -> None:
    def body(data: str) -> dict[str, Any]:
        source = {"type": "base64", "media_type": "image/png", "data": data}
        image = {"type": "image", "source": source}
        return {"model": "m", "messages": [{"role": "user", "content": [image]}]}

    one, other = (
        token_view(Wire.MESSAGES, body("AAAA" * 5000)),
        token_view(Wire.MESSAGES, body("BBBB")),
    )
    assert len(one) == len(other) == len(tokens("user")) + IMAGE_TOKENS
    assert one.tokens != other.tokens
