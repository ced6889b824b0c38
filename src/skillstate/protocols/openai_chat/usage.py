"""Token usage and finish reasons, shared by responses and streams.

``prompt_tokens`` already counts cached tokens, so it is ``Usage.input`` as it stands;
``prompt_tokens_details.cached_tokens`` (or DeepSeek's ``prompt_cache_hit_tokens``) is
``cached_input``, ``prompt_tokens_details.cache_write_tokens`` is ``cache_write`` and
``completion_tokens_details.reasoning_tokens`` is ``reasoning``. Upstream usage is read
leniently: a missing or malformed count reads as 0.
"""

from __future__ import annotations

from typing import Any

from skillstate.conversation import Json, StopReason, Usage

_STOP: dict[str, StopReason] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}
_FINISH: dict[StopReason, str] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
    "error": "stop",
}


def stop_reason(finish_reason: Any) -> StopReason | None:
    """The canonical stop reason; a reason this wire does not define reads as ``end_turn``."""
    if finish_reason is None:
        return None
    return _STOP.get(finish_reason, "end_turn") if isinstance(finish_reason, str) else "end_turn"


def finish_reason(reason: StopReason | None, original: Any = None) -> Any:
    """This wire's finish reason: the ``original`` one while it still means ``reason``."""
    if original is not None and stop_reason(original) == reason:
        return original
    return None if reason is None else _FINISH[reason]


def _count(obj: Any, key: str) -> int:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def decode_usage(raw: Any) -> Usage:
    prompt = raw.get("prompt_tokens_details") if isinstance(raw, dict) else None
    completion = raw.get("completion_tokens_details") if isinstance(raw, dict) else None
    cached = _count(prompt, "cached_tokens") or _count(raw, "prompt_cache_hit_tokens")
    return Usage(
        input=_count(raw, "prompt_tokens"),
        output=_count(raw, "completion_tokens"),
        cached_input=cached,
        cache_write=_count(prompt, "cache_write_tokens"),
        reasoning=_count(completion, "reasoning_tokens"),
    )


def encode_usage(usage: Usage, original: Any = None) -> Json:
    """This wire's usage object: the ``original`` one while it still reads as ``usage``."""
    if isinstance(original, dict) and decode_usage(original) == usage:
        return original
    details: Json = {"cached_tokens": usage.cached_input}
    if usage.cache_write:
        details["cache_write_tokens"] = usage.cache_write
    return {
        "prompt_tokens": usage.input,
        "completion_tokens": usage.output,
        "total_tokens": usage.input + usage.output,
        "prompt_tokens_details": details,
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning},
    }
