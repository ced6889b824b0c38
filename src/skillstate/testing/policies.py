"""How the scripted upstream chooses a reply: a ``Policy`` is any callable from the recorded
request to a ``Reply``. ``Script`` plays a fixed list; ``default_policy`` echoes the user."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from skillstate.conversation import Wire
from skillstate.testing.recording import RecordedRequest
from skillstate.testing.replies import Reply

Policy = Callable[[RecordedRequest], Reply]


class ScriptExhausted(RuntimeError):
    """A ``Script`` was asked for more replies than it holds."""


class Script:
    """Answers with ``replies`` in order, one per model request.

    When the replies run out it raises ``ScriptExhausted`` rather than repeating the last one:
    a gateway that sends more upstream requests than the test planned for (an extra retry, a
    continuation round) is exactly what a test wants to see. The server answers that request
    with HTTP 500 and keeps the exception in ``ScriptedUpstream.errors``."""

    def __init__(self, replies: Sequence[Reply]) -> None:
        self._replies = list(replies)
        self._used = 0

    @property
    def remaining(self) -> int:
        return len(self._replies) - self._used

    def __call__(self, request: RecordedRequest) -> Reply:
        if self._used >= len(self._replies):
            raise ScriptExhausted(
                f"script exhausted: {len(self._replies)} replies given, "
                f"request #{request.index} ({request.method} {request.path}) wants another"
            )
        reply = self._replies[self._used]
        self._used += 1
        return reply


def default_policy(request: RecordedRequest) -> Reply:
    """Echoes the newest user text (``You said: …``), or answers ``ok`` when the request ends in
    something else (a tool result, say): enough for a demo to show what reached the model."""
    text = last_user_text(request)
    return Reply(text=f"You said: {text}" if text else "ok")


def last_user_text(request: RecordedRequest) -> str:
    """The text of the newest user message on any wire, or "" when there is none."""
    body = request.json
    if not isinstance(body, dict):
        return ""
    if request.wire is Wire.RESPONSES:
        items = body.get("input")
        if isinstance(items, str):
            return items
    else:
        items = body.get("messages")
    messages: list[Any] = items if isinstance(items, list) else []
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return _text_of(message.get("content"))
    return ""


def _text_of(content: Any) -> str:
    """Text of a message's content: a string, or the text parts of a list of blocks
    (``text`` on Chat and Anthropic, ``input_text`` on Responses)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") in ("text", "input_text")
        and isinstance(block.get("text"), str)
    ]
    return "\n".join(texts)
