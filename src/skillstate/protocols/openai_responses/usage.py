"""Usage figures and the response ``status`` on the Responses wire.

``input_tokens`` already counts the cached prompt tokens (``input_tokens_details.cached_tokens``)
and those written to the cache (``cache_write_tokens``), which is the canonical contract;
``output_tokens`` counts ``output_tokens_details.reasoning_tokens``.

Stop reasons: ``completed`` is ``TOOL_CALLS`` when the output holds a function or custom tool
call and ``END`` otherwise; ``incomplete`` is ``LENGTH`` (reason ``max_output_tokens``) or
``REFUSAL`` (reason ``content_filter``); ``failed`` and ``cancelled`` are ``ERROR``.
"""

from __future__ import annotations

from skillstate.conversation import Json, StopReason, Usage

CALL_TYPES = frozenset({"function_call", "custom_tool_call"})


def decode_usage(raw: object) -> Usage:
    """Tolerant: a missing or malformed figure counts as zero."""
    if not isinstance(raw, dict):
        return Usage()
    prompt = raw.get("input_tokens_details")
    prompt = prompt if isinstance(prompt, dict) else {}
    completion = raw.get("output_tokens_details")
    completion = completion if isinstance(completion, dict) else {}
    return Usage(
        input=_count(raw.get("input_tokens")),
        output=_count(raw.get("output_tokens")),
        cached_input=_count(prompt.get("cached_tokens")),
        cache_write=_count(prompt.get("cache_write_tokens")),
        reasoning=_count(completion.get("reasoning_tokens")),
    )


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def encode_usage(usage: Usage) -> Json:
    return {
        "input_tokens": usage.input,
        "input_tokens_details": {
            "cached_tokens": usage.cached_input,
            "cache_write_tokens": usage.cache_write,
        },
        "output_tokens": usage.output,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning},
        "total_tokens": usage.input + usage.output,
    }


def stop_reason(status: object, incomplete: object, has_call: bool) -> StopReason | None:
    if status == "completed":
        return StopReason.TOOL_CALLS if has_call else StopReason.END
    if status == "incomplete":
        reason = incomplete.get("reason") if isinstance(incomplete, dict) else None
        return StopReason.REFUSAL if reason == "content_filter" else StopReason.LENGTH
    if status in ("failed", "cancelled"):
        return StopReason.ERROR
    return None


def status_for(stop: StopReason | None) -> tuple[str, Json | None]:
    """``(status, incomplete_details)`` for a canonical stop reason."""
    if stop is StopReason.LENGTH:
        return "incomplete", {"reason": "max_output_tokens"}
    if stop is StopReason.REFUSAL:
        return "incomplete", {"reason": "content_filter"}
    if stop is StopReason.ERROR:
        return "failed", None
    return "completed", None


def has_call(output: object) -> bool:
    return isinstance(output, list) and any(
        isinstance(item, dict) and _tag(item) in CALL_TYPES for item in output
    )


def _tag(item: Json) -> str | None:
    kind = item.get("type")
    return kind if isinstance(kind, str) else None
