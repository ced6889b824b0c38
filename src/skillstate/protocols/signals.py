"""What each real client sends that identifies its conversation (see shared/CLIENTS.md).

``session_signals`` lists (source, value) pairs in order of trust; ``fingerprint_material``
gives the stable start of a conversation (system prompt and first user message) for clients
that send no signal at all. Both read the raw body, so they cost nothing when no lane needs
the canonical request.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from skillstate.conversation import Wire

#: Header signals, most specific first: (header, source name).
_HEADER_SIGNALS = (
    ("x-claude-code-session-id", "claude-code"),
    ("session-id", "codex"),
    ("thread-id", "codex-thread"),
    ("x-session-id", "opencode"),
    ("x-session-affinity", "opencode-affinity"),
)


def session_signals(headers: Mapping[str, str], body: Mapping[str, Any]) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for header, source in _HEADER_SIGNALS:
        value = headers.get(header)
        if value:
            found.append((source, value))
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping):
        claude = _claude_session(metadata.get("user_id"))
        if claude:
            found.append(("claude-code-metadata", claude))
        for key in ("session_id", "conversation_id", "thread_id"):
            value = metadata.get(key)
            if isinstance(value, str) and value:
                found.append(("metadata", value))
                break
    cache_key = body.get("prompt_cache_key")
    if isinstance(cache_key, str) and cache_key:
        found.append(("prompt-cache-key", cache_key))
    return found


def _claude_session(user_id: object) -> str | None:
    """Claude Code's ``metadata.user_id`` is a JSON string with a ``session_id`` (current), or
    ``user_<hash>_account_<uuid>_session_<uuid>`` (older releases)."""
    if not isinstance(user_id, str) or not user_id:
        return None
    if user_id.startswith("{"):
        try:
            parsed = json.loads(user_id)
        except ValueError:
            return None
        value = parsed.get("session_id") if isinstance(parsed, dict) else None
        return value if isinstance(value, str) and value else None
    _, sep, tail = user_id.rpartition("_session_")
    return tail if sep and tail else None


def fingerprint_material(wire: Wire, body: Mapping[str, Any]) -> list[Any]:
    """The parts of a request that stay the same for a whole conversation: who the end user
    is (``user``), the system prompt, and the first user message."""
    user = body.get("user")
    if wire is Wire.MESSAGES:
        system: Any = body.get("system")
        messages = body.get("messages")
    elif wire is Wire.RESPONSES:
        system = body.get("instructions")
        messages = body.get("input")
        if isinstance(messages, str):
            return [user, system, messages]
    else:
        system = None
        messages = body.get("messages")
    first_user: Any = None
    leading: list[Any] = []
    if isinstance(messages, list):
        for item in messages:
            if not isinstance(item, Mapping):
                continue
            role = item.get("role")
            if role in ("system", "developer") and first_user is None:
                leading.append(item.get("content"))
            elif role == "user":
                first_user = item.get("content")
                break
    return [user, system, leading, first_user]


def newest_output_chars(wire: Wire, body: Mapping[str, Any]) -> int:
    """The characters of the longest tool output the client added since the model's newest
    reply (the messages after the last assistant one), read from the raw body: what tells
    the express path that a request carries a bulky output the state lane must price
    (``state.bulky``). Text only, as the outputs lane reads it; 0 where there is none."""
    listed = body.get("input" if wire is Wire.RESPONSES else "messages")
    if not isinstance(listed, list):
        return 0
    longest = 0
    for item in reversed(listed):
        if type(item) is not dict:  # as JSON reads: anything else is no message
            continue
        role = item.get("role")
        if role == "assistant" or item.get("type") in _REPLIES:
            break
        if wire is Wire.CHAT:
            if role == "tool":
                longest = max(longest, _text_chars(item.get("content")))
        elif wire is Wire.RESPONSES:
            if item.get("type") in _OUTPUTS:
                longest = max(longest, _text_chars(item.get("output")))
        else:
            content = item.get("content")
            for block in content if isinstance(content, list) else ():
                if isinstance(block, Mapping) and block.get("type") == "tool_result":
                    longest = max(longest, _text_chars(block.get("content")))
    return longest


_REPLIES = frozenset({"function_call", "custom_tool_call", "reasoning"})
"""Responses input items the model wrote (besides its assistant messages)."""
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})


def _text_chars(content: Any) -> int:
    """A tool output's text length: a string, or the text blocks of a list of them."""
    if isinstance(content, str):
        return len(content)
    if not isinstance(content, list):
        return 0
    return sum(
        len(block["text"])
        for block in content
        if isinstance(block, Mapping) and isinstance(block.get("text"), str)
    )
