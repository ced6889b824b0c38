"""The identity law on what real clients send: bodies recorded from real clients (under
tests/fixtures/recorded/openai-chat/, when present) and hand-written bodies in the shapes of
the OpenAI SDK, vision clients, compatible providers and legacy function calling."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from skillstate.conversation import Reasoning, ToolCall, ToolResult
from skillstate.protocols.openai_chat import decode_request, encode_request
from skillstate.support.jsonio import dumps, loads

RECORDED = Path(__file__).parent.parent / "fixtures" / "recorded" / "openai-chat"
WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
    "required": ["city", "unit"],
    "additionalProperties": False,
}
SDK_AGENT = {
    "messages": [
        {"role": "developer", "content": "You are a weather bot."},
        {"role": "user", "content": "Weather in Paris and Oslo?"},
        {
            "role": "assistant",
            "content": None,
            "refusal": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris","unit":"c"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Oslo","unit":"c"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "18C sunny"},
        {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "4C"}]},
    ],
    "model": "gpt-5-mini",
    "max_completion_tokens": 2048,
    "reasoning_effort": "low",
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather",
                "parameters": WEATHER,
                "strict": True,
            },
        }
    ],
    "stream": True,
    "stream_options": {"include_usage": True},
    "prompt_cache_key": "session-42",
    "metadata": {"app": "demo"},
    "store": False,
    "seed": 18446744073709551617,
}
VISION = {
    "model": "gpt-4o",
    "messages": [
        {"role": "system", "content": [{"type": "text", "text": "Describe images."}]},
        {
            "role": "user",
            "name": "reviewer",
            "content": [
                {"type": "text", "text": "Compare these."},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
                {
                    "type": "image_url",
                    "image_url": {
                        "url": "data:image/jpeg;base64,/9j/4AAQSkZJRg==",
                        "detail": "high",
                    },
                },
                {"type": "file", "file": {"filename": "spec.pdf", "file_data": "JVBERi0x"}},
                {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
            ],
        },
    ],
    "max_tokens": 300,
    "temperature": 0,
}
COMPATIBLE = {
    "model": "deepseek-reasoner",
    "messages": [
        {"role": "user", "content": "List files"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "I should call ls.",
            "tool_calls": [
                {"id": "call_0", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_0", "content": "a.py\nb.py"},
        {"role": "assistant", "content": "Two files.", "reasoning": "Done."},
        {"role": "user", "content": "thanks"},
    ],
    "tools": [{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}],
    "stream": False,
    "stop": ["\n\nUser:"],
    "top_p": 0.95,
    "frequency_penalty": 0.1,
    "response_format": {"type": "json_object"},
    "user": "u-1",
    "n": 1,
    "logit_bias": {"50256": -100},
}
LEGACY = {
    "model": "gpt-3.5-turbo",
    "messages": [
        {"role": "user", "content": "What time is it?"},
        {"role": "assistant", "content": None, "function_call": {"name": "now", "arguments": "{}"}},
        {"role": "function", "name": "now", "content": "12:00"},
    ],
    "functions": [{"name": "now", "parameters": {"type": "object", "properties": {}}}],
    "function_call": "auto",
    "stop": "###",
    "max_tokens": None,
}
FREEFORM = {
    "model": "gpt-5",
    "messages": [
        {"role": "user", "content": "Patch the file"},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Applying."}],
            "tool_calls": [
                {
                    "id": "call_p",
                    "type": "custom",
                    "custom": {"name": "apply_patch", "input": "*** Begin Patch"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_p", "content": "Done!"},
    ],
    "tools": [
        {
            "type": "custom",
            "custom": {
                "name": "apply_patch",
                "description": "Edit files",
                "format": {
                    "type": "grammar",
                    "grammar": {"syntax": "lark", "definition": "start: /.+/"},
                },
            },
        },
        {"type": "function", "function": {"name": "shell"}},
    ],
    "tool_choice": {
        "type": "allowed_tools",
        "allowed_tools": {
            "mode": "auto",
            "tools": [{"type": "custom", "custom": {"name": "apply_patch"}}],
        },
    },
    "verbosity": "low",
}
HAND_WRITTEN = {
    "sdk-agent": SDK_AGENT,
    "vision": VISION,
    "compatible": COMPATIBLE,
    "legacy": LEGACY,
    "freeform": FREEFORM,
}


def recorded() -> dict[str, bytes]:
    if not RECORDED.is_dir():
        return {}
    return {
        path.stem: path.read_bytes()
        for path in sorted(RECORDED.glob("*.json"))
        if not path.name.endswith(".headers.json")
    }


BODIES = {**{k: dumps(v) for k, v in HAND_WRITTEN.items()}, **recorded()}


@pytest.mark.parametrize("name", sorted(BODIES))
def test_identity_on_real_shapes(name: str) -> None:
    raw = BODIES[name]
    body = loads(raw)
    assert encode_request(decode_request(body)) == body
    assert loads(dumps(encode_request(decode_request(loads(raw))))) == loads(raw)


def test_the_shapes_decode_to_what_they_mean() -> None:
    agent = decode_request(SDK_AGENT)
    assert agent.params.max_tokens == 2048 and agent.params.effort == "low"
    assert agent.extra["seed"] == 18446744073709551617
    results = [p for m in agent.messages for p in m.parts if isinstance(p, ToolResult)]
    assert [r.call_id for r in results] == ["call_1", "call_2"]
    compatible = decode_request(COMPATIBLE)
    thoughts = [p.text for m in compatible.messages for p in m.parts if isinstance(p, Reasoning)]
    assert thoughts == ["I should call ls.", "Done."]
    freeform = decode_request(FREEFORM)
    assert freeform.tools[0].kind == "custom" and freeform.params.tool_choice is None
    calls = [p for p in freeform.messages[1].parts if isinstance(p, ToolCall)]
    assert calls[0].kind == "custom" and calls[0].arguments == "*** Begin Patch"
    legacy = decode_request(LEGACY)
    assert legacy.messages[2].role == "tool" and legacy.extra["functions"][0]["name"] == "now"


def test_recorded_bodies_are_real_client_requests() -> None:
    """Each recorded body (if any were recorded) is a streaming request asking for usage."""
    for name, raw in recorded().items():
        body: dict[str, Any] = loads(raw)
        req = decode_request(body)
        assert req.params.stream, name
        assert req.extra.get("stream_options") == {"include_usage": True}, name
