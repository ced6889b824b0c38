"""Anthropic Messages samples for the adapter's tests: hypothesis strategies for valid request
and response bodies covering every shape the adapter models, hand-written realistic bodies
(Claude Code, an SDK user, a count_tokens body), the recorded real-client bodies when present,
a provider-style stream of a response body, and a key-level check against the SDK's types."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

from anthropic.types import (
    ImageBlockParam,
    RedactedThinkingBlockParam,
    TextBlockParam,
    ThinkingBlockParam,
    ThinkingConfigEnabledParam,
    ToolParam,
    ToolResultBlockParam,
    ToolUseBlockParam,
)
from anthropic.types.message_create_params import MessageCreateParamsBase
from hypothesis import strategies as st

from skillstate.protocols.sse import encode_event
from skillstate.support.jsonio import dumps_str, loads

Json = dict[str, Any]

# -- hypothesis strategies -------------------------------------------------------------------

TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
IDS = st.text("abcdefghijklmnopqrstuvwxyz0123456789_", min_size=1, max_size=10)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
)
JSON = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3)
)
OBJECTS = st.dictionaries(TEXT, JSON, max_size=4)
CACHE = st.sampled_from(
    [
        {"type": "ephemeral"},
        {"type": "ephemeral", "ttl": "1h"},
        # shapes a CacheMark alone does not give back: kept in hints
        {"ttl": "5m", "type": "ephemeral"},
        {"type": "ephemeral", "scope": "global"},
        {"type": "persistent"},
        {"type": "ephemeral", "ttl": None},
    ]
)
MAYBE_CACHE = CACHE | st.none()
#: Fields no version of the model names, at every level, to prove they survive.
UNKNOWN = {"x_future": JSON}


def _obj(required: Json, optional: Json | None = None) -> st.SearchStrategy[Json]:
    return st.fixed_dictionaries(
        {k: v if isinstance(v, st.SearchStrategy) else st.just(v) for k, v in required.items()},
        optional=optional or {},
    )


TEXT_BLOCKS = _obj(
    {"type": "text", "text": TEXT},
    {
        "cache_control": MAYBE_CACHE,
        "citations": st.none()
        | st.just([{"type": "char_location", "cited_text": "a", "document_index": 0}]),
        **UNKNOWN,
    },
)
IMAGE_SOURCES = (
    _obj({"type": "base64", "media_type": st.sampled_from(["image/png", "image/jpeg"])}).flatmap(
        lambda s: _obj({**s, "data": st.text("ABCabc012+/=", max_size=16)})
    )
    | _obj({"type": "url", "url": IDS.map(lambda s: f"https://example.com/{s}.png")})
    | _obj({"type": "file", "file_id": IDS})
)
IMAGE_BLOCKS = _obj({"type": "image", "source": IMAGE_SOURCES}, {"cache_control": MAYBE_CACHE})
TOOL_USE_BLOCKS = _obj(
    {"type": "tool_use", "id": IDS, "name": IDS, "input": OBJECTS},
    {"cache_control": MAYBE_CACHE, "caller": st.just({"type": "direct"})},
)
DOCUMENT_BLOCKS = _obj(
    {"type": "document", "source": _obj({"type": "text", "media_type": "text/plain"})},
    {"title": TEXT, "cache_control": CACHE},
)
SEARCH_RESULT_BLOCKS = _obj(
    {"type": "search_result", "source": TEXT, "title": TEXT, "content": st.just([])}
)
OPAQUE_BLOCKS = st.one_of(
    DOCUMENT_BLOCKS,
    _obj({"type": "server_tool_use", "id": IDS, "name": "web_search", "input": OBJECTS}),
    _obj({"type": "web_search_tool_result", "tool_use_id": IDS, "content": st.just([])}),
    SEARCH_RESULT_BLOCKS,
    _obj({"type": "container_upload", "file_id": IDS}),
    _obj({"type": "mcp_tool_use", "id": IDS, "name": IDS, "server_name": IDS, "input": OBJECTS}),
)
#: Blocks a tool result may hold that the model has no type for: they become opaque items.
RESULT_OPAQUE_BLOCKS = st.one_of(
    _obj({"type": "tool_reference", "tool_name": IDS}, {"cache_control": CACHE}),
    DOCUMENT_BLOCKS,
    SEARCH_RESULT_BLOCKS,
)
RESULT_CONTENT = (
    TEXT
    | st.lists(TEXT_BLOCKS | IMAGE_BLOCKS, max_size=3)
    | st.lists(TEXT_BLOCKS | IMAGE_BLOCKS | RESULT_OPAQUE_BLOCKS, max_size=3)
    | st.none()
)
TOOL_RESULT_BLOCKS = _obj(
    {"type": "tool_result", "tool_use_id": IDS},
    {
        "content": RESULT_CONTENT,
        "is_error": st.booleans() | st.none(),
        "cache_control": MAYBE_CACHE,
        **UNKNOWN,
    },
)
#: Signed, as the API issues them: a request leaves unsigned thinking out.
THINKING_BLOCKS = _obj({"type": "thinking", "thinking": TEXT, "signature": IDS})
REDACTED_BLOCKS = _obj({"type": "redacted_thinking", "data": TEXT})
BLOCKS = st.one_of(
    TEXT_BLOCKS,
    IMAGE_BLOCKS,
    TOOL_USE_BLOCKS,
    TOOL_RESULT_BLOCKS,
    THINKING_BLOCKS,
    REDACTED_BLOCKS,
    OPAQUE_BLOCKS,
)
MESSAGES = _obj(
    {
        "role": st.sampled_from(["user", "assistant", "system"]),
        "content": TEXT | st.lists(BLOCKS, max_size=4),
    },
    UNKNOWN,
)
SCHEMAS = OBJECTS.map(lambda props: {"type": "object", "properties": props})
FUNCTION_TOOLS = _obj(
    {"name": IDS, "input_schema": SCHEMAS},
    {
        "type": st.just("custom") | st.none(),
        "description": TEXT,
        "cache_control": MAYBE_CACHE,
        "strict": st.booleans(),
        "input_examples": st.lists(OBJECTS, max_size=2),
        "defer_loading": st.booleans(),
    },
)
HOSTED_TOOLS = st.one_of(
    _obj({"type": "bash_20250124", "name": "bash"}, {"cache_control": CACHE}),
    _obj({"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"}),
    _obj({"type": "web_search_20250305", "name": "web_search"}, {"max_uses": st.integers(1, 9)}),
)
PARALLEL = {"disable_parallel_tool_use": st.booleans() | st.none()}
TOOL_CHOICES = st.one_of(
    _obj({"type": st.sampled_from(["auto", "any", "none"])}, PARALLEL),
    _obj({"type": "tool", "name": IDS}, PARALLEL),
    _obj({"type": "future_choice"}, UNKNOWN),
)
THINKING = st.one_of(
    _obj({"type": "enabled", "budget_tokens": st.integers(1024, 64000)}, {"display": TEXT}),
    _obj({"type": st.sampled_from(["adaptive", "disabled"])}, {"display": TEXT}),
)
OUTPUT_CONFIGS = _obj(
    {},
    {
        "effort": st.sampled_from(["low", "medium", "high", "xhigh", "max"]) | st.none(),
        "format": st.just({"type": "json_schema", "schema": {"type": "object"}}),
    },
)
NUMBERS = st.floats(0, 1) | st.integers(0, 1)
REQUEST_BODIES = _obj(
    {"model": IDS, "messages": st.lists(MESSAGES, max_size=4)},
    {
        "max_tokens": st.integers(0, 2**31) | st.none(),
        "system": TEXT | st.lists(TEXT_BLOCKS, max_size=3) | st.none(),
        "tools": st.lists(FUNCTION_TOOLS | HOSTED_TOOLS, max_size=3) | st.none(),
        "tool_choice": TOOL_CHOICES | st.none(),
        "thinking": THINKING | st.none(),
        "output_config": OUTPUT_CONFIGS,
        "temperature": NUMBERS | st.none(),
        "top_p": NUMBERS,
        "stop_sequences": st.lists(TEXT, max_size=2) | st.none(),
        "stream": st.booleans() | st.none(),
        "metadata": _obj({"user_id": TEXT}),
        "top_k": st.integers(1, 500),
        "context_management": st.just({"edits": [{"type": "clear_thinking_20251015"}]}),
        "service_tier": st.just("auto"),
        **UNKNOWN,
    },
)


def _split_writes(usage: Json) -> Json:
    """The ``cache_creation`` breakdown as the API sends it: its two figures sum to
    ``cache_creation_input_tokens`` (the one-hour part drawn, the five-minute part the rest)."""
    if "cache_creation" in usage:
        total = usage.get("cache_creation_input_tokens") or 0
        one_hour = min(usage["cache_creation"], total)
        usage["cache_creation"] = {
            "ephemeral_5m_input_tokens": total - one_hour,
            "ephemeral_1h_input_tokens": one_hour,
        }
    return usage


USAGES = _obj(
    {"input_tokens": st.integers(0, 10**6), "output_tokens": st.integers(0, 10**5)},
    {
        "cache_creation_input_tokens": st.integers(0, 10**6) | st.none(),
        "cache_read_input_tokens": st.integers(0, 10**6) | st.none(),
        "cache_creation": st.integers(0, 10**6),
        "service_tier": st.just("standard"),
        "server_tool_use": st.just({"web_search_requests": 1, "web_fetch_requests": 0}),
        "output_tokens_details": _obj({"thinking_tokens": st.integers(0, 999)}),
    },
).map(_split_writes)
STOP_REASONS = st.sampled_from(
    [
        *("end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal"),
        *("model_context_window_exceeded", "a_future_reason"),
    ]
)
RESPONSE_BLOCKS = st.one_of(
    TEXT_BLOCKS.map(lambda b: {k: v for k, v in b.items() if k != "cache_control"}),
    _obj({"type": "thinking", "thinking": TEXT, "signature": IDS}),
    REDACTED_BLOCKS,
    TOOL_USE_BLOCKS.map(lambda b: {k: v for k, v in b.items() if k != "cache_control"}),
    _obj({"type": "server_tool_use", "id": IDS, "name": "web_search", "input": OBJECTS}),
    _obj({"type": "web_search_tool_result", "tool_use_id": IDS, "content": st.just([])}),
)
RESPONSE_BODIES = _obj(
    {
        "id": IDS.map(lambda s: f"msg_{s}"),
        "type": "message",
        "role": "assistant",
        "model": IDS,
        "content": st.lists(RESPONSE_BLOCKS, max_size=4),
        "stop_reason": STOP_REASONS | st.none(),
        "stop_sequence": TEXT | st.none(),
        "usage": USAGES,
    },
    {"container": st.just({"id": "c1", "expires_at": "2026-12-01T00:00:00Z"})},
)

# -- hand-written realistic bodies -----------------------------------------------------------

SIGNATURE = "EqQBCkYIBxgCKkBsk1C2v0tZdD1QCw5OQh3Lz6bYq0D2lJfn8p1mPz3xj2ZtYQ=="

#: Shaped like what Claude Code 2.1.197 was seen to send (system blocks led by a billing
#: header, a mid-conversation ``system`` message, cached tool results, adaptive thinking).
CLAUDE_CODE_BODY: Json = {
    "model": "claude-sonnet-4-5-20250929",
    "max_tokens": 32000,
    "stream": True,
    "metadata": {"user_id": '{"device_id":"4f1c","account_uuid":"","session_id":"5b7e"}'},
    "system": [
        {
            "type": "text",
            "text": "x-anthropic-billing-header: cc_version=2.1.197; cc_entrypoint=cli;",
        },
        {
            "type": "text",
            "text": "You are Claude Code, Anthropic's official CLI for Claude.",
            "cache_control": {"type": "ephemeral"},
        },
        {
            "type": "text",
            "text": "You are an interactive CLI tool that helps users with software tasks.",
            "cache_control": {"type": "ephemeral"},
        },
    ],
    "messages": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "<system-reminder>Today is 2026-12-01.</system-reminder>"},
                {"type": "text", "text": "list the files", "cache_control": {"type": "ephemeral"}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "I should run ls.", "signature": SIGNATURE},
                {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
                {"type": "text", "text": "I'll list them."},
                {
                    "type": "tool_use",
                    "id": "toolu_01A09q90qw90lq917835lq9",
                    "name": "Bash",
                    "input": {"command": "ls -la", "description": "List files", "timeout": 1.5e4},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_01B",
                    "name": "Read",
                    "input": {"file_path": "/repo/a.py", "offset": 18446744073709551617},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01A09q90qw90lq917835lq9",
                    "content": "a.txt\nb.txt",
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01B",
                    "content": [
                        {"type": "text", "text": "1\tprint('hi')"},
                        {
                            "type": "image",
                            "source": {
                                "type": "base64",
                                "media_type": "image/png",
                                "data": "iVBOR",
                            },
                        },
                    ],
                    "cache_control": {"type": "ephemeral"},
                },
            ],
        },
        {"role": "system", "content": "<system-reminder>Plan mode is off.</system-reminder>"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "now read the docs"},
                {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": "Docs."},
                },
            ],
        },
    ],
    "tools": [
        {
            "name": "Bash",
            "description": "Executes a given bash command in a persistent shell session.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command to execute"},
                    "timeout": {"type": "number"},
                },
                "required": ["command"],
                "additionalProperties": False,
                "$schema": "http://json-schema.org/draft-07/schema#",
            },
        },
        {
            "name": "mcp__docs__search",
            "description": "Search the docs.",
            "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
            "defer_loading": True,
            "cache_control": {"type": "ephemeral"},
        },
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 5},
    ],
    "tool_choice": {"type": "auto"},
    "thinking": {"type": "adaptive"},
    "output_config": {"effort": "high"},
    "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
}

SDK_BODY: Json = {
    "model": "claude-haiku-4-5",
    "max_tokens": 1024,
    "system": "Be brief.",
    "messages": [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": "Let me check."},
        {"role": "user", "content": "Thanks"},
    ],
    "temperature": 0.2,
    "stop_sequences": ["\n\nHuman:"],
    "thinking": {"type": "enabled", "budget_tokens": 2048},
    "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
    "tools": [
        {
            "type": "custom",
            "name": "get_weather",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            "strict": True,
        }
    ],
}

COUNT_TOKENS_BODY: Json = {
    "model": "claude-sonnet-4-5",
    "system": [{"type": "text", "text": "You are Claude Code."}],
    "messages": [{"role": "user", "content": "count me"}],
    "tools": CLAUDE_CODE_BODY["tools"][:1],
}

RESPONSE_BODY: Json = {
    "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5-20250929",
    "content": [
        {"type": "thinking", "thinking": "The user wants files.", "signature": SIGNATURE},
        {"type": "text", "text": "Here they are."},
        {"type": "tool_use", "id": "toolu_01C", "name": "Bash", "input": {"command": "ls"}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 12,
        "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 4000,
        "cache_creation": {"ephemeral_5m_input_tokens": 300, "ephemeral_1h_input_tokens": 0},
        "output_tokens": 90,
        "service_tier": "standard",
    },
}

HANDWRITTEN_REQUESTS = {
    "claude_code": CLAUDE_CODE_BODY,
    "sdk": SDK_BODY,
    "count_tokens": COUNT_TOKENS_BODY,
}

# -- recorded real-client bodies -------------------------------------------------------------

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded" / "anthropic-messages"


def recorded_requests() -> dict[str, Json]:
    """The request bodies real clients sent, by file name (see that folder's README; the
    ``.headers.json`` files beside them hold headers, not bodies)."""
    paths = sorted(RECORDED.glob("*.json"))
    return {p.name: loads(p.read_bytes()) for p in paths if not p.name.endswith(".headers.json")}


# -- a provider-style stream -----------------------------------------------------------------


def stream_of(body: Json, piece: int = 3) -> bytes:
    """The SSE bytes the API sends for response ``body``, content cut in ``piece``-character
    deltas, with pings, usage split between ``message_start`` and ``message_delta``."""
    usage = body["usage"]
    start_usage = {k: v for k, v in usage.items() if k != "output_tokens"}
    start_usage["output_tokens"] = min(1, usage["output_tokens"])
    message = {k: v for k, v in body.items() if k not in ("content", "usage", "stop_reason")}
    message |= {"content": [], "stop_reason": None, "stop_sequence": None, "usage": start_usage}
    out = [_event("message_start", {"message": message}), _event("ping", {})]
    for index, block in enumerate(body["content"]):
        out.extend(_block_events(index, block, piece))
    delta = {"stop_reason": body["stop_reason"], "stop_sequence": body["stop_sequence"]}
    end_usage = {"output_tokens": usage["output_tokens"]}
    out.append(_event("message_delta", {"delta": delta, "usage": end_usage}))
    out.append(_event("message_stop", {}))
    return b"".join(out)


def _block_events(index: int, block: Json, piece: int) -> list[bytes]:
    kind = block["type"]
    if kind == "text":
        opening, deltas = {"type": "text", "text": ""}, _cut("text_delta", "text", block, piece)
    elif kind == "thinking":
        opening = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = _cut("thinking_delta", "thinking", block, piece)
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind in ("tool_use", "server_tool_use"):
        opening = {**block, "input": {}}
        text = dumps_str(block["input"])
        deltas = [
            {"type": "input_json_delta", "partial_json": text[i : i + piece]}
            for i in range(0, len(text), piece)
        ]
    else:
        opening, deltas = block, []
    events = [_event("content_block_start", {"index": index, "content_block": opening})]
    events += [_event("content_block_delta", {"index": index, "delta": d}) for d in deltas]
    return [*events, _event("content_block_stop", {"index": index})]


def _cut(kind: str, key: str, block: Json, piece: int) -> list[Json]:
    text = block[key]
    return [{"type": kind, key: text[i : i + piece]} for i in range(0, len(text), piece)]


def _event(name: str, data: Json) -> bytes:
    return encode_event(dumps_str({"type": name, **data}), name)


# -- shapes the SDK's types allow ------------------------------------------------------------

_BLOCK_TYPES: dict[str, Any] = {
    "text": TextBlockParam,
    "image": ImageBlockParam,
    "tool_use": ToolUseBlockParam,
    "tool_result": ToolResultBlockParam,
    "thinking": ThinkingBlockParam,
    "redacted_thinking": RedactedThinkingBlockParam,
}


#: Top-level fields the SDK's request type no longer lists but the API takes for older models.
_SAMPLING = {"stream", "temperature", "top_p", "top_k"}


def assert_sdk_shape(body: Json) -> None:
    """Every object of a request body has the required keys of its SDK type and no key that
    type lacks (the SDK's TypedDicts cannot be validated by value)."""
    _keys(body, MessageCreateParamsBase, _SAMPLING)
    for message in body["messages"]:
        assert message["role"] in ("user", "assistant", "system")
        assert isinstance(message["content"], str | list)
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block["type"] in _BLOCK_TYPES:  # others pass through whole, as the client sent
                _keys(block, _BLOCK_TYPES[block["type"]])
            for inner in block.get("content", []) if block["type"] == "tool_result" else []:
                if inner["type"] in _BLOCK_TYPES:  # tool_reference, document...: as sent
                    _keys(inner, _BLOCK_TYPES[inner["type"]])
    for block in body["system"] if isinstance(body.get("system"), list) else []:
        _keys(block, TextBlockParam)
    for tool in body.get("tools", []):
        _keys(tool, ToolParam)
    if "thinking" in body:
        _keys(body["thinking"], ThinkingConfigEnabledParam)


def _keys(obj: Json, kind: Any, more: set[str] | None = None) -> None:
    hints = typing.get_type_hints(kind, include_extras=True)
    required = {k for k, v in hints.items() if typing.get_origin(v) is typing.Required}
    assert required <= obj.keys(), (kind.__name__, obj)
    assert obj.keys() <= hints.keys() | (more or set()), (kind.__name__, obj)
