"""What the fault load tests (``bench/faults.py``, ``bench/flaky.py``) send on each wire and
how they judge what comes back: a whole reply, a well-formed error of the client's wire, a
silent truncation (a 200 that is not whole), or a malformed error."""

from __future__ import annotations

import json
from typing import Any

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
