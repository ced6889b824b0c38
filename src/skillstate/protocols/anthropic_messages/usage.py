"""Token usage and stop reasons.

Usage (https://docs.anthropic.com/en/api/messages, ``usage``): this wire's ``input_tokens``
excludes the prompt tokens read from and written to the cache (the API documents the prompt
total as ``input_tokens + cache_creation_input_tokens + cache_read_input_tokens``); the
canonical ``Usage.input`` includes them. So ``input`` is that sum, ``cached_input`` the cache
reads, ``cache_write`` the cache writes, and encoding gives back ``input_tokens = input -
cached_input - cache_write``. ``cache_creation`` breaks the cache writes down by time to live:
its ``ephemeral_1h_input_tokens`` is ``cache_write_1h`` and its ``ephemeral_5m_input_tokens``
is read as the rest of ``cache_write`` (the API sends them summing to it), so it encodes back
as ``cache_write - cache_write_1h``. ``reasoning`` is ``output_tokens_details.thinking_tokens``
where the provider reports it.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from skillstate.conversation import Json, StopReason, Usage
from skillstate.protocols.fields import merged, need_object, need_str, optional_int, split_known

INPUT = "input_tokens"
CACHE_WRITE = "cache_creation_input_tokens"
CACHE_READ = "cache_read_input_tokens"
OUTPUT = "output_tokens"
DETAILS = "output_tokens_details"
BREAKDOWN = "cache_creation"
FIVE_MINUTES = "ephemeral_5m_input_tokens"
ONE_HOUR = "ephemeral_1h_input_tokens"
#: The token counts, in the order the API sends them.
COUNTS = (INPUT, CACHE_WRITE, CACHE_READ, OUTPUT)
#: What a message's ``usage`` always holds: the counts and the cache writes' breakdown.
MESSAGE_KEYS = (*COUNTS, BREAKDOWN)


def read_counts(value: Any, path: str) -> tuple[dict[str, int], Json]:
    """The counts a usage object holds (absent ones left out) and its other fields."""
    got, extra = split_known(need_object(value, path), COUNTS)
    counts: dict[str, int] = {}
    for key in COUNTS:
        count = optional_int(got, key, path)
        if count is not None:
            counts[key] = count
    return counts, extra


def to_usage(counts: dict[str, int], extra: Json) -> Usage:
    cached, written = counts.get(CACHE_READ, 0), counts.get(CACHE_WRITE, 0)
    return Usage(
        input=counts.get(INPUT, 0) + cached + written,
        output=counts.get(OUTPUT, 0),
        cached_input=cached,
        cache_write=written,
        reasoning=_count(extra.get(DETAILS), "thinking_tokens"),
        cache_write_1h=_count(extra.get(BREAKDOWN), ONE_HOUR),
    )


def _count(obj: Any, key: str) -> int:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def encode_usage(usage: Usage, keys: Collection[str], extra: Json | None = None) -> Json:
    """A usage object holding the fields named in ``keys`` and any other non-zero count; a
    zero count that ``extra`` holds as null (as sent) stays null. The breakdown of the cache
    writes is there when ``keys`` names it, when ``extra`` holds it (updated if it no longer
    agrees) or when some of the writes were for an hour."""
    extra = extra or {}
    values = {
        INPUT: max(0, usage.input - usage.cached_input - usage.cache_write),
        CACHE_WRITE: usage.cache_write,
        CACHE_READ: usage.cached_input,
    }
    out: Json = {k: v for k, v in values.items() if v or (k in keys and k not in extra)}
    if BREAKDOWN in keys or BREAKDOWN in extra or usage.cache_write_1h:
        out[BREAKDOWN] = _breakdown(usage, extra)
    if usage.output or (OUTPUT in keys and OUTPUT not in extra):
        out[OUTPUT] = usage.output
    details = extra.get(DETAILS)
    if isinstance(details, dict) and ("thinking_tokens" in details or usage.reasoning):
        out[DETAILS] = {**details, "thinking_tokens": usage.reasoning}
    elif usage.reasoning:
        out[DETAILS] = {"thinking_tokens": usage.reasoning}
    return merged(out, extra) if extra else out


def _breakdown(usage: Usage, extra: Json) -> Any:
    """``cache_creation`` for ``usage``: the one in ``extra`` while it says the same (a null
    one while no write was for an hour), else one with its figures set anew."""
    original = extra.get(BREAKDOWN)
    one_hour = usage.cache_write_1h
    fresh = {FIVE_MINUTES: max(0, usage.cache_write - one_hour), ONE_HOUR: one_hour}
    if isinstance(original, dict):
        same = all(_count(original, k) == v and k in original for k, v in fresh.items())
        return original if same else {**original, **fresh}
    if original is None and BREAKDOWN in extra and not one_hour:
        return None
    return fresh


#: this wire's stop reason -> canonical (``model_context_window_exceeded`` is a length stop)
STOPS: dict[str, StopReason] = {
    "end_turn": StopReason.END,
    "tool_use": StopReason.TOOL_CALLS,
    "max_tokens": StopReason.LENGTH,
    "stop_sequence": StopReason.STOP_SEQUENCE,
    "refusal": StopReason.REFUSAL,
    "pause_turn": StopReason.PAUSE,
    "model_context_window_exceeded": StopReason.LENGTH,
}
#: canonical -> this wire's stop reason; ``ERROR`` has no word here and is ``end_turn``
REASONS: dict[StopReason, str] = {
    StopReason.END: "end_turn",
    StopReason.TOOL_CALLS: "tool_use",
    StopReason.LENGTH: "max_tokens",
    StopReason.STOP_SEQUENCE: "stop_sequence",
    StopReason.REFUSAL: "refusal",
    StopReason.PAUSE: "pause_turn",
    StopReason.ERROR: "end_turn",
}


def decode_stop(value: Any, path: str = "stop_reason") -> StopReason | None:
    """The canonical stop reason; a reason this adapter does not know reads as ``END``
    (callers keep the raw value, see ``stop_kept``)."""
    if value is None:
        return None
    return STOPS.get(need_str(value, path), StopReason.END)


def encode_stop(stop: StopReason | None, raw: Any = None) -> str:
    """This wire's stop reason: the raw one decoded earlier while it still means ``stop``;
    no reason is ``end_turn``."""
    if isinstance(raw, str) and decode_stop(raw) == stop:
        return raw
    return "end_turn" if stop is None else REASONS[stop]


def stop_kept(raw: Any, stop: StopReason | None) -> bool:
    """Whether the raw ``stop_reason`` must be kept beside ``stop`` (the value it decoded to)
    to re-encode as sent: a reason this wire's table does not give back."""
    return raw is not None and encode_stop(stop) != raw
