"""What the fault load tests (``bench/faults.py``, ``bench/flaky.py``) send on each wire and
how they judge what comes back: a whole reply, a well-formed error of the client's wire, a
silent truncation (a 200 that is not whole), or a malformed error; ``shoot`` sends one request
and judges it, for both tests' clients."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

WIRES = {
    "chat": "/v1/chat/completions",
    "responses": "/v1/responses",
    "messages": "/v1/messages",
}
TOOL = {"type": "object", "properties": {"k": {"type": "string"}}}


def request_body(wire: str, key: str, stream: bool) -> dict[str, Any]:
    """A one-line task that asks to remember ``key``, with one tool, in ``wire``."""
    text = f"Remember {key}."
    if wire == "chat":
        tools: list[Any] = [{"type": "function", "function": {"name": "look", "parameters": TOOL}}]
        return {"model": "m", "stream": stream, "messages": [{"role": "user", "content": text}],
                "tools": tools}  # fmt: skip
    if wire == "responses":
        tools = [{"type": "function", "name": "look", "parameters": TOOL}]
        return {"model": "m", "stream": stream, "input": text, "tools": tools}
    tools = [{"name": "look", "input_schema": TOOL}]
    return {"model": "m", "max_tokens": 64, "stream": stream, "tools": tools,
            "messages": [{"role": "user", "content": text}]}  # fmt: skip


def whole(wire: str, status: int, stream: bool, raw: bytes) -> str:
    """``ok``, ``failed`` (a well-formed error in the client's wire), ``truncated`` (a 200 that
    is not a whole reply) or ``malformed`` (an error that is not the wire's)."""
    if status != 200:
        try:
            body = json.loads(raw)
        except ValueError:
            return "malformed"
        error = body.get("error") if isinstance(body, dict) else None
        return "failed" if isinstance(error, dict) else "malformed"
    if not stream:
        try:
            body = json.loads(raw)
        except ValueError:
            return "truncated"
        return "ok" if _complete(wire, body) else "truncated"
    text = raw.decode(errors="replace").replace(" ", "")
    if wire == "chat":
        if '"error":{' in text:
            return "failed"
        done = text.rstrip().endswith("data:[DONE]") and '"finish_reason":"' in text
        return "ok" if done else "truncated"
    if wire == "messages":
        if "event:error" in text:
            return "failed"
        return "ok" if "event:message_stop" in text else "truncated"
    if '"type":"error"' in text or "response.failed" in text:
        return "failed"
    return "ok" if "response.completed" in text or "response.incomplete" in text else "truncated"


def _complete(wire: str, body: Any) -> bool:
    if not isinstance(body, dict):
        return False
    if wire == "chat":
        choices = body.get("choices") or [{}]
        return bool(choices[0].get("finish_reason"))
    if wire == "messages":
        return bool(body.get("stop_reason"))
    return body.get("status") in ("completed", "incomplete")


@dataclass(frozen=True, slots=True)
class Shot:
    """One request's fate: ``outcome`` is ``whole``'s verdict, or ``hung`` (the client gave up)
    or ``broken`` (the connection failed under the client, ``error`` says how)."""

    wire: str
    outcome: str
    status: int = 0
    raw: bytes = b""
    error: str = ""

    def line(self, tail: int = 200) -> str:
        """The shot as one line of a report: wire, status and the end of the body."""
        return f"{self.wire} {self.status}: {self.raw[-tail:]!r}"


async def shoot(
    session: aiohttp.ClientSession,
    url: str,
    wire: str,
    key: str,
    stream: bool,
    headers: Mapping[str, str],
) -> Shot:
    """Send ``request_body(wire, key, stream)`` to the gateway or provider at ``url`` and
    judge what comes back."""
    sent = dict(headers)
    if wire == "messages":
        sent["anthropic-version"] = "2023-06-01"
    body = request_body(wire, key, stream)
    try:
        async with session.post(url + WIRES[wire], json=body, headers=sent) as reply:
            raw, status = await reply.read(), reply.status
    except TimeoutError:
        return Shot(wire, "hung")
    except aiohttp.ClientError as exc:
        return Shot(wire, "broken", error=f"{type(exc).__name__}: {exc}")
    return Shot(wire, whole(wire, status, stream, raw), status, raw)
