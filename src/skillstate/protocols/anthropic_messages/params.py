"""Generation parameters: ``max_tokens``, sampling, ``stop_sequences``, ``stream``,
``tool_choice``, ``thinking``, ``output_config`` (``effort`` and ``format``) and the beta's
top-level ``output_format`` (see ``formats``).

``tool_choice``, ``thinking`` and ``output_config`` are objects with fields the model does not
name (``display``, a future choice type); the object as sent is kept in ``hints`` and
re-emitted while the canonical fields read from it are unchanged, and rebuilt when a lane
changed them.
"""

from __future__ import annotations

from typing import Any, Literal

from skillstate.conversation import Json, OutputFormat, Params, ProtocolError, ToolChoice
from skillstate.protocols.anthropic_messages.formats import (
    config_format,
    encode_format,
    read_format,
    sent_format,
)
from skillstate.protocols.fields import (
    need_object,
    optional_bool,
    optional_int,
    optional_number,
    optional_str,
    optional_str_list,
    required_str,
    split_known,
)

#: ``max_tokens`` is required by this wire; a request from a wire where it is optional gets
#: this much room for the answer (plus the thinking budget, which counts toward it).
DEFAULT_MAX_TOKENS = 8192

#: The effort levels every model that takes ``output_config.effort`` accepts; other levels
#: from another wire (``minimal``, ``xhigh`` ...) are not sent.
PORTABLE_EFFORTS = frozenset(("low", "medium", "high"))

KEYS = (
    "max_tokens",
    "temperature",
    "top_p",
    "stop_sequences",
    "stream",
    "tool_choice",
    "thinking",
    "output_config",
    "output_format",
)

_Mode = Literal["auto", "none", "required", "tool"]
_MODES: dict[str, _Mode] = {"auto": "auto", "any": "required", "tool": "tool", "none": "none"}
_TYPES = {mode: kind for kind, mode in _MODES.items()}


def decode_params(got: Json, hints: Json) -> Params:
    """The parameters among the body's known, non-null fields ``got``; shape facts go to
    ``hints``."""
    params = Params(
        max_tokens=optional_int(got, "max_tokens"),
        temperature=optional_number(got, "temperature"),
        top_p=optional_number(got, "top_p"),
        stop=optional_str_list(got, "stop_sequences"),
        stream=bool(optional_bool(got, "stream")),
    )
    if "stream" in got:
        hints["stream"] = True
    if "tool_choice" in got:
        params.tool_choice, params.parallel_tool_calls = _tool_choice(got["tool_choice"])
        hints["tool_choice"] = got["tool_choice"]
    if "thinking" in got:
        params.thinking_budget = _thinking(got["thinking"])
        hints["thinking"] = got["thinking"]
    if "output_config" in got:
        params.effort = _effort(got["output_config"])
        params.output_format = config_format(got["output_config"])
        hints["output_config"] = got["output_config"]
    if "output_format" in got:
        legacy = read_format(got["output_format"], "output_format")
        params.output_format = params.output_format or legacy
        hints["output_format"] = got["output_format"]
    return params


def _tool_choice(value: Any) -> tuple[ToolChoice | None, bool | None]:
    """``any`` is canonical ``required``; ``disable_parallel_tool_use`` is the negation of
    ``parallel_tool_calls``. An unknown choice type has no canonical choice."""
    got, _ = split_known(
        need_object(value, "tool_choice"), ("type", "name", "disable_parallel_tool_use")
    )
    mode = _MODES.get(required_str(got, "type", "tool_choice"))
    disable = optional_bool(got, "disable_parallel_tool_use", "tool_choice")
    parallel = None if disable is None else not disable
    if mode is None:
        return None, parallel
    name = required_str(got, "name", "tool_choice") if mode == "tool" else None
    return ToolChoice(mode, name), parallel


def _thinking(value: Any) -> int | None:
    got, _ = split_known(need_object(value, "thinking"), ("type", "budget_tokens"))
    if required_str(got, "type", "thinking") != "enabled":
        return None
    return optional_int(got, "budget_tokens", "thinking")


def _effort(value: Any) -> str | None:
    got, _ = split_known(need_object(value, "output_config"), ("effort",))
    return optional_str(got, "effort", "output_config")


def encode_params(params: Params, hints: Json, native: bool, has_tools: bool) -> Json:
    """The parameter fields of a body. ``hints`` are this wire's (empty from another wire)."""
    out: Json = {}
    if params.max_tokens is not None:
        out["max_tokens"] = params.max_tokens
    elif not native:
        out["max_tokens"] = DEFAULT_MAX_TOKENS + (params.thinking_budget or 0)
    if params.temperature is not None:
        out["temperature"] = params.temperature
    if params.top_p is not None:
        out["top_p"] = params.top_p
    if params.stop is not None:
        out["stop_sequences"] = params.stop
    if params.stream or hints.get("stream"):
        out["stream"] = params.stream
    choice = _encode_tool_choice(params, hints.get("tool_choice"), native, has_tools)
    if choice is not None:
        out["tool_choice"] = choice
    thinking = _encode_thinking(params.thinking_budget, hints.get("thinking"))
    if thinking is not None:
        out["thinking"] = thinking
    fmt = params.output_format if native else sent_format(params.output_format)
    legacy = hints.get("output_format")
    if legacy is not None and fmt == read_format(legacy, "output_format"):
        out["output_format"] = legacy  # the client's own field still says it
        fmt = config_format(hints.get("output_config") or {})
    raw = hints.get("output_config")
    output_config = _encode_output_config(params.effort, fmt, raw, native)
    if output_config is not None:
        out["output_config"] = output_config
    return out


def _encode_tool_choice(params: Params, raw: Any, native: bool, has_tools: bool) -> Json | None:
    """From another wire, a choice is sent only with tools (this wire refuses one without) and
    ``disable_parallel_tool_use`` only to disable (enabled is the default)."""
    choice, parallel = params.tool_choice, params.parallel_tool_calls
    if raw is not None and _tool_choice(raw) == (choice, parallel):
        return need_object(raw, "tool_choice")
    if not native:
        if not has_tools:
            return None
        if parallel:
            parallel = None
    if choice is None and parallel is None:
        return None
    mode = choice.mode if choice is not None else "auto"
    out: Json = {"type": _TYPES[mode]}
    if mode == "tool":
        if choice is None or not choice.name:
            raise ProtocolError("a tool choice of mode 'tool' needs a tool name")
        out["name"] = choice.name
    if parallel is not None:
        out["disable_parallel_tool_use"] = not parallel
    return out


def _encode_thinking(budget: int | None, raw: Any) -> Json | None:
    if raw is not None and _thinking(raw) == budget:
        return need_object(raw, "thinking")
    if budget is None:
        return None
    return {"type": "enabled", "budget_tokens": budget}


def _encode_output_config(
    effort: str | None, fmt: OutputFormat | None, raw: Any, native: bool
) -> Json | None:
    if raw is not None and (_effort(raw), config_format(raw)) == (effort, fmt):
        return need_object(raw, "output_config")
    kept = need_object(raw or {}, "output_config").items()
    out: Json = {k: v for k, v in kept if k not in ("effort", "format")}
    if effort is not None and (native or effort in PORTABLE_EFFORTS):
        out["effort"] = effort
    if fmt is not None:
        out["format"] = encode_format(fmt)
    return out or None
