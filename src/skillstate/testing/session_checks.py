"""Reading what the gateway sent upstream in a long session: epochs, shared prefixes, pairs.

These read the scripted upstream's ``RecordedRequest`` bodies on the wire, not through the
gateway's own code, so a test of the gateway built on them is not circular:

* ``epoch_of``: which epoch a request belongs to, told by its Σ message (fixed for an epoch);
* ``prefix_break``: whether a request extends the previous one: the previous request's
  messages, less what the gateway added at their end (the tail note, internal rounds), are a
  prefix of the next one's, message by message as JSON values (block by block for the
  newest one, where the upstream wire merged the tail note into it), and every other
  top-level key is the same. The order of an object's keys is not compared: it does not reach
  the prompt a provider caches, and a request forwarded as the client's bytes (hybrid before
  its first boundary) orders them as the client did, while the gateway's own encoding has an
  order of its own. Anthropic cache markers are left out of the comparison too: the client
  moves its marker to the newest block on every request, and a marker does not change the
  content a provider caches. Nor are the reply's settings (streamed or not, the output limit)
  where one of the two is the gateway's handover round, which sends its own
  (``state.handover.own_settings``): they are not part of the prompt a provider caches;
* ``unpaired``: call ids without a result and results without their call;
* ``shared_prefix_bytes``: how many leading bytes two bodies share (what a prefix cache of
  the raw body would serve).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from skillstate.conversation import Json, Wire
from skillstate.support import jsonio
from skillstate.testing.recording import RecordedRequest
from skillstate.testing.session_view import HANDOVER_HEADING, NOTE_PREFIX

SIGMA_PREFIX = NOTE_PREFIX + " Session state Σ"
INTERNAL_TOOLS = frozenset({"skill_state", "recall"})


def messages_of(recorded: RecordedRequest) -> list[Json]:
    """The conversation array of a request: ``input`` on Responses, ``messages`` otherwise."""
    body = recorded.json
    key = "input" if recorded.wire is Wire.RESPONSES else "messages"
    value = body.get(key) if isinstance(body, dict) else None
    return list(value) if isinstance(value, list) else []


def _texts(message: Json) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [str(b.get("text", "")) for b in content if isinstance(b, dict) and "text" in b]


def is_gateway_note(message: Json) -> bool:
    texts = _texts(message)
    return message.get("role") == "user" and bool(texts) and texts[0].startswith(NOTE_PREFIX)


def epoch_of(recorded: RecordedRequest) -> str | None:
    """The text of the request's Σ message (the same for every request of one epoch), or
    ``None`` before the first boundary."""
    for message in messages_of(recorded):
        # An upstream wire that merges consecutive user messages puts it beside the head's.
        for text in _texts(message):
            if text.startswith(SIGMA_PREFIX):
                return text
    return None


def _unmarked(message: Json) -> Json:
    content = message.get("content")
    if not isinstance(content, list):
        return message
    blocks = [
        {k: v for k, v in b.items() if k != "cache_control"} if isinstance(b, dict) else b
        for b in content
    ]
    return {**message, "content": blocks}


def _internal_ids(messages: Sequence[Json]) -> set[str]:
    return {call_id for call_id, name in _calls(messages) if name in INTERNAL_TOOLS}


def _calls(messages: Sequence[Json]) -> Iterator[tuple[str, str]]:
    for m in messages:
        if m.get("type") == "function_call":
            yield str(m.get("call_id")), str(m.get("name"))
        content = m.get("content")
        for b in content if isinstance(content, list) else []:
            if isinstance(b, dict) and b.get("type") == "tool_use":
                yield str(b.get("id")), str(b.get("name"))
        for c in m.get("tool_calls") or []:
            yield str(c.get("id")), str(c.get("function", {}).get("name"))


def _results(message: Json) -> list[str]:
    if message.get("type") == "function_call_output" or message.get("role") == "tool":
        return [str(message.get("call_id") or message.get("tool_call_id"))]
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    return [str(b.get("tool_use_id")) for b in blocks if b.get("type") == "tool_result"]


def _added_by_gateway(message: Json, internal: set[str]) -> bool:
    """Whether a message at the end of a request is the gateway's own: its tail note, an
    internal call (with the reasoning or text around it), or an internal call's result."""
    if is_gateway_note(message):
        return True
    calls = list(_calls([message]))
    if calls:
        return all(call_id in internal for call_id, _ in calls)
    results = _results(message)
    return bool(results) and all(r in internal for r in results)


def prefix_break(previous: RecordedRequest, current: RecordedRequest) -> str | None:
    """Why ``current`` does not extend ``previous`` (see the module docstring), or None."""
    old = [_unmarked(m) for m in messages_of(previous)]
    new = [_unmarked(m) for m in messages_of(current)]
    common = 0
    while common < min(len(old), len(new)) and old[common] == new[common]:
        common += 1
    internal = _internal_ids(old)
    rest = old[common:]
    if rest and common < len(new) and _block_prefix(rest[0], new[common]):
        rest = rest[1:]
    # The internal round's reasoning may reach the client (it streams), the call does not.
    for message in rest:
        if not _added_by_gateway(message, internal) and message.get("type") != "reasoning":
            return (
                f"request #{current.index}: message {common} differs from request "
                f"#{previous.index}'s and is not the gateway's: {jsonio.dumps_str(message)[:300]}"
            )
    mine, theirs = _others(previous), _others(current)
    if _handing_over(previous) or _handing_over(current):
        mine, theirs = _unsettled(mine), _unsettled(theirs)
    if mine != theirs:
        changed = sorted(k for k in {*mine, *theirs} if mine.get(k) != theirs.get(k))
        return f"request #{current.index}: top-level keys changed: {changed}"
    return None


def _block_prefix(old: Json, new: Json) -> bool:
    """Whether ``old``, less the gateway's text blocks at its end, is ``new`` or a start of
    it, block by block: an upstream wire that merges consecutive user messages puts the tail
    note inside the newest one, and the next request appends to that message instead."""
    blocks, later = old.get("content"), new.get("content")
    if not isinstance(blocks, list) or not isinstance(later, list):
        return False
    if {k: v for k, v in old.items() if k != "content"} != {
        k: v for k, v in new.items() if k != "content"
    }:
        return False
    kept = list(blocks)
    while kept and str(kept[-1].get("text", "")).startswith(NOTE_PREFIX):
        kept.pop()
    if len(kept) == len(blocks) or len(kept) > len(later):
        return False
    return all(a == b for a, b in zip(kept, later, strict=False))


def _others(recorded: RecordedRequest) -> dict[str, Any]:
    body = recorded.json if isinstance(recorded.json, dict) else {}
    return {k: v for k, v in body.items() if k not in ("input", "messages")}


REPLY_SETTINGS = frozenset(
    {"stream", "stream_options", "max_tokens", "max_completion_tokens", "max_output_tokens"}
)
"""The top-level keys, on any wire, that say how the reply comes, not what the prompt is."""


def _unsettled(others: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in others.items() if k not in REPLY_SETTINGS}


def _handing_over(recorded: RecordedRequest) -> bool:
    """Whether ``recorded`` is the gateway's handover round (its last message asks for it)."""
    messages = messages_of(recorded)
    return bool(messages) and HANDOVER_HEADING in jsonio.dumps_str(messages[-1])


def unpaired(messages: Sequence[Json]) -> list[str]:
    """Call ids of a conversation array (``messages_of``) without a result after them, and
    results without their call before them."""
    problems: list[str] = []
    called: set[str] = set()
    answered: set[str] = set()
    for message in messages:
        for call_id in _results(message):
            if call_id not in called:
                problems.append(f"result {call_id} without its call")
            answered.add(call_id)
        called.update(call_id for call_id, _ in _calls([message]))
    problems.extend(f"call {c} without its result" for c in sorted(called - answered))
    return problems


def shared_prefix_bytes(previous: bytes, current: bytes) -> int:
    """The number of leading bytes ``previous`` and ``current`` share."""
    limit = min(len(previous), len(current))
    low, high = 0, limit
    while low < high:  # binary search on equal prefixes: fast on large bodies
        mid = (low + high + 1) // 2
        if previous[:mid] == current[:mid]:
            low = mid
        else:
            high = mid - 1
    return low
