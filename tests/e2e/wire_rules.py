"""Whether a request body keeps the rules its wire's providers enforce, those a gateway that
rewrites conversations could break: tool calls and results paired (OpenAI: "No tool call
found for function call output"; Anthropic: "tool_use ids were found without tool_result
blocks"), and on Anthropic at most four ``cache_control`` breakpoints.

* Responses: every ``function_call_output`` answers a ``function_call`` earlier in ``input``,
  and every call is answered once.
* Messages: the ``tool_result`` blocks of a user message answer exactly the ``tool_use`` blocks
  of the assistant message just before it.
* Chat: the ``role:"tool"`` messages after an assistant message with ``tool_calls`` answer
  exactly those calls, and no tool message stands anywhere else.

``wire_problems`` returns one line per problem, so a failing test says what was wrong where.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from skillstate.conversation import Wire

#: Anthropic's limit on cache breakpoints in one request (system, tools and messages).
MAX_BREAKPOINTS = 4


def wire_problems(wire: Wire, body: Mapping[str, Any]) -> list[str]:
    """The ways ``body`` breaks ``wire``'s rules above; empty when it keeps them."""
    if wire is Wire.RESPONSES:
        items = body.get("input")
        return _responses(items if isinstance(items, list) else [])
    messages = body.get("messages")
    listed = [m for m in messages if isinstance(m, Mapping)] if isinstance(messages, list) else []
    if wire is Wire.CHAT:
        return _chat(listed)
    problems = _messages(listed)
    count = breakpoints(body)
    if count > MAX_BREAKPOINTS:
        problems.append(f"{count} cache_control breakpoints, more than {MAX_BREAKPOINTS}")
    return problems


def breakpoints(value: Any) -> int:
    """How many ``cache_control`` markers ``value`` holds, at any depth."""
    if isinstance(value, Mapping):
        own = 1 if value.get("cache_control") is not None else 0
        return own + sum(breakpoints(v) for k, v in value.items() if k != "cache_control")
    if isinstance(value, list):
        return sum(breakpoints(item) for item in value)
    return 0


def _responses(items: list[Any]) -> list[str]:
    problems: list[str] = []
    calls: list[str] = []
    answered: Counter[str] = Counter()
    for position, item in enumerate(items):
        if not isinstance(item, Mapping):
            continue
        call_id = str(item.get("call_id"))
        if item.get("type") == "function_call":
            calls.append(call_id)
        elif item.get("type") == "function_call_output":
            if call_id not in calls:
                problems.append(f"input[{position}]: output for {call_id}, no call before it")
            answered[call_id] += 1
    for call_id in calls:
        if answered[call_id] != 1:
            problems.append(f"call {call_id} answered {answered[call_id]} times")
    return problems


def _blocks(message: Mapping[str, Any], kind: str, key: str) -> list[str]:
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    return [str(b.get(key)) for b in blocks if isinstance(b, Mapping) and b.get("type") == kind]


def _messages(messages: list[Mapping[str, Any]]) -> list[str]:
    problems: list[str] = []
    for position, message in enumerate(messages):
        results = _blocks(message, "tool_result", "tool_use_id")
        before = messages[position - 1] if position else {}
        uses = _blocks(before, "tool_use", "id") if before.get("role") == "assistant" else []
        if message.get("role") == "user" and uses and sorted(results) != sorted(uses):
            problems.append(f"messages[{position}]: results {results} for calls {uses}")
        elif results and not uses:
            problems.append(f"messages[{position}]: results {results} after no tool_use")
    if messages and _blocks(messages[-1], "tool_use", "id"):
        problems.append("the last message has tool_use blocks that nothing answers")
    return problems


def _chat(messages: list[Mapping[str, Any]]) -> list[str]:
    problems: list[str] = []
    waiting: list[str] | None = None
    answered: list[str] = []
    for position, message in enumerate(messages):
        if message.get("role") == "tool":
            call_id = str(message.get("tool_call_id"))
            if waiting is None or call_id not in waiting:
                problems.append(f"messages[{position}]: tool result {call_id} answers no call")
            answered.append(call_id)
            continue
        if waiting is not None and sorted(waiting) != sorted(answered):
            problems.append(f"messages[{position}]: calls {waiting} answered by {answered}")
        calls = message.get("tool_calls")
        listed = calls if isinstance(calls, list) else []
        ids = [str(c.get("id")) for c in listed if isinstance(c, Mapping)]
        waiting, answered = (ids or None), []
    if waiting is not None and sorted(waiting) != sorted(answered):
        problems.append(f"the last calls {waiting} are answered by {answered}")
    return problems
