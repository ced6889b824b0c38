"""What the scripted upstream answers for one request: a ``Reply``.

A reply is wire-neutral: the same ``Reply`` becomes a Chat Completion, a Responses object or an
Anthropic message depending on the route the request came in on. Everything a test leaves out is
derived deterministically (call ids, stop reason, token counts), so two runs of one script send
byte-identical bodies.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from skillstate.testing.faults import Fault

#: Why the fake model stopped, in the fake's own words (Anthropic's); each wire renders it in its
#: own. Not the gateway's ``StopReason``: the fake keeps its own copy of every wire.
Stop = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal"]

#: The fake's error kinds, named as Anthropic names them (not the gateway's ``ErrorKind``: the
#: fake does not depend on the model and adapters it is used to test).
ERROR_KINDS = (
    "invalid_request_error",
    "authentication_error",
    "permission_error",
    "not_found_error",
    "request_too_large",
    "rate_limit_error",
    "api_error",
    "overloaded_error",
)


def kind_for(status: int) -> str:
    """The error kind a provider usually sends with ``status``."""
    known = {
        400: "invalid_request_error",
        401: "authentication_error",
        403: "permission_error",
        404: "not_found_error",
        413: "request_too_large",
        429: "rate_limit_error",
        503: "overloaded_error",
        529: "overloaded_error",
    }
    if status in known:
        return known[status]
    return "api_error" if status >= 500 else "invalid_request_error"


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """A tool call the fake model makes. ``id=None`` lets the server generate one in the wire's
    style (``call_…`` on Chat and Responses, ``toolu_…`` on Anthropic), derived from the
    request's position so it is the same on every run."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True, slots=True)
class ScriptedError:
    """An error answer: ``status`` and ``kind`` become the wire's error body. With
    ``mid_stream`` a streaming request first gets HTTP 200 and the reply's text, then the wire's
    error event (a non-streaming request gets the plain error response either way)."""

    status: int
    message: str
    kind: str
    mid_stream: bool = False


@dataclass(frozen=True, slots=True)
class Reply:
    """The fake model's answer to one request.

    Usage: ``input_tokens=None`` counts the request's prompt fields, ``output_tokens=None``
    estimates the reply (see ``outcome.estimate_tokens``); ``cached_tokens`` and
    ``cache_write_tokens`` are parts of the input, as in the canonical ``Usage``; with
    ``usage=False`` none of it is sent.

    Pacing (streams only): ``chunk_delay`` seconds pass between events; with ``hold`` the
    stream sends its first ``hold_after`` events (one by default), then waits for the event to
    be set before sending the rest. A non-streaming answer waits for ``hold`` before it is sent
    at all.
    """

    text: str = ""
    calls: Sequence[ScriptedCall] = ()
    reasoning: str | None = None
    stop: Stop | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    chunk_delay: float = 0.0
    hold: asyncio.Event | None = None
    hold_after: int = 1
    headers: Mapping[str, str] = field(default_factory=dict)
    error: ScriptedError | None = None
    fault: Fault | None = None
    """A way to fail the wire itself (``testing.faults``)."""
    delay: float = 0.0
    """Seconds before the answer starts (``Fault.SLOW``)."""
    usage: bool = True
    """False: the answer reports no usage anywhere, as a server that never sends one
    (llama.cpp's streams): a Chat body without ``usage`` and a Chat stream without its usage
    chunk even when asked for one, a Responses object with ``"usage": null``, an Anthropic
    message and stream with no ``usage`` object."""

    @classmethod
    def failure(
        cls,
        status: int,
        message: str,
        kind: str | None = None,
        *,
        mid_stream: bool = False,
        text: str = "Partial answer before the error.",
        chunk_delay: float = 0.0,
        hold: asyncio.Event | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        """An error reply. ``kind`` defaults from ``status``; ``text`` is what a mid-stream
        failure sends before its error event."""
        chosen = kind or kind_for(status)
        if chosen not in ERROR_KINDS:
            raise ValueError(f"unknown error kind {chosen!r}; expected one of {ERROR_KINDS}")
        return cls(
            text=text if mid_stream else "",
            chunk_delay=chunk_delay,
            hold=hold,
            headers=dict(headers or {}),
            error=ScriptedError(status, message, chosen, mid_stream),
        )

    @property
    def stop_reason(self) -> Stop:
        """The explicit ``stop``, else ``tool_use`` when the reply calls tools, else
        ``end_turn``."""
        if self.stop is not None:
            return self.stop
        return "tool_use" if self.calls else "end_turn"
