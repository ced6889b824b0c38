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

#: this wire's finish reason -> canonical
_STOP: dict[str, StopReason] = {
    "stop": StopReason.END,
    "length": StopReason.LENGTH,
    "tool_calls": StopReason.TOOL_CALLS,
    "function_call": StopReason.TOOL_CALLS,
    "content_filter": StopReason.REFUSAL,
}
#: canonical -> this wire's finish reason (a stop sequence, a pause and an error are ``stop``)
_FINISH: dict[StopReason, str] = {
    StopReason.END: "stop",
    StopReason.STOP_SEQUENCE: "stop",
    StopReason.PAUSE: "stop",
    StopReason.LENGTH: "length",
    StopReason.TOOL_CALLS: "tool_calls",
    StopReason.REFUSAL: "content_filter",
    StopReason.ERROR: "stop",
}


def stop_reason(finish_reason: Any) -> StopReason | None:
    """The canonical stop reason; a reason this wire does not define reads as ``END``."""
    if finish_reason is None:
        return None
    if not isinstance(finish_reason, str):
        return StopReason.END
    return _STOP.get(finish_reason, StopReason.END)


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
