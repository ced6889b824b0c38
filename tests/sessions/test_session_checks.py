"""The readings the long-session tests rely on catch what they are meant to catch: a request
that does not extend the previous one, a changed top-level key, a split tool pair."""

from __future__ import annotations

from typing import Any

from multidict import CIMultiDict, CIMultiDictProxy

from skillstate.conversation import Wire
from skillstate.support import jsonio
from skillstate.testing import RecordedRequest
from skillstate.testing.session_checks import (
    epoch_of,
    prefix_break,
    shared_prefix_bytes,
    unpaired,
)
from skillstate.testing.session_view import HANDOVER_HEADING


def recorded(index: int, wire: Wire, body: dict[str, Any]) -> RecordedRequest:
    return RecordedRequest(
        index, "POST", "/v1/x", {}, CIMultiDictProxy(CIMultiDict()), jsonio.dumps(body), body, wire
    )


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def call(call_id: str, name: str = "exec_command") -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": "{}"}


def output(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": f"out {call_id}"}


SIGMA = user("[skillstate] Session state Σ, kept by the gateway. ```json\n{}\n```")
NOTE = user("[skillstate] Σ changes since the state message")


def responses(index: int, items: list[dict[str, Any]], **extra: Any) -> RecordedRequest:
    return recorded(index, Wire.RESPONSES, {"model": "m", "input": items, "tools": [], **extra})


def test_a_request_that_appends_after_the_tail_note_extends_the_previous_one() -> None:
    first = responses(0, [user("task"), SIGMA, call("a"), output("a"), NOTE])
    second = responses(1, [user("task"), SIGMA, call("a"), output("a"), call("b"), output("b")])
    assert prefix_break(first, second) is None
    assert epoch_of(first) == epoch_of(second) is not None
    assert epoch_of(responses(2, [user("task")])) is None


def test_an_internal_round_at_the_end_is_the_gateways_own() -> None:
    first = responses(0, [user("task"), call("a"), output("a"), call("s", "skill_state")])
    first.json["input"].append(output("s"))
    second = responses(1, [user("task"), call("a"), output("a"), call("b"), output("b")])
    assert prefix_break(first, second) is None


def test_a_changed_message_or_top_level_key_breaks_the_prefix() -> None:
    first = responses(0, [user("task"), call("a"), output("a")])
    edited = responses(1, [user("task, edited"), call("a"), output("a"), call("b"), output("b")])
    assert "message 0 differs" in (prefix_break(first, edited) or "")
    retooled = responses(1, [user("task"), call("a"), output("a")], tools=[{"name": "x"}])
    assert "top-level keys changed: ['tools']" in (prefix_break(first, retooled) or "")


def test_a_moved_anthropic_cache_marker_does_not_break_the_prefix_but_content_does() -> None:
    marked = {"type": "text", "text": "task", "cache_control": {"type": "ephemeral"}}
    first = recorded(0, Wire.MESSAGES, {"messages": [{"role": "user", "content": [marked]}]})
    moved = {"role": "user", "content": [{"type": "text", "text": "task"}]}
    later = {"role": "assistant", "content": [{"type": "text", "text": "ok", **marked}]}
    second = recorded(1, Wire.MESSAGES, {"messages": [moved, later]})
    assert prefix_break(first, second) is None
    changed = {"role": "user", "content": [{"type": "text", "text": "other"}]}
    assert prefix_break(first, recorded(2, Wire.MESSAGES, {"messages": [changed]}))


def test_unpaired_names_calls_without_results_and_results_without_calls() -> None:
    assert unpaired([call("a"), output("a"), call("b"), call("c"), output("c")]) == [
        "call b without its result"
    ]
    assert unpaired([output("x"), call("x")]) == ["result x without its call"]
    parallel = [
        {"role": "assistant", "content": [{"type": "tool_use", "id": i} for i in ("p", "q")]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "q"}]},
    ]
    assert unpaired(parallel) == ["call p without its result"]


def test_shared_prefix_bytes_counts_the_leading_bytes_in_common() -> None:
    assert shared_prefix_bytes(b"abcdef", b"abcxyz") == 3
    assert shared_prefix_bytes(b"abc", b"abcdef") == 3
    assert shared_prefix_bytes(b"", b"a") == 0


def test_the_order_of_an_objects_keys_does_not_break_the_prefix_but_a_list_order_does() -> None:
    """A request forwarded as the client's bytes orders its keys as the client did; the
    gateway's own encoding of the next one orders them its way. The prompt is the same."""
    first = responses(0, [user("task"), call("a"), output("a")])
    reordered = [dict(reversed(list(item.items()))) for item in first.json["input"]]
    second = recorded(1, Wire.RESPONSES, {"tools": [], "input": reordered, "model": "m"})
    assert prefix_break(first, second) is None
    swapped = responses(1, [call("a"), user("task"), output("a")])
    assert "message 0 differs" in (prefix_break(first, swapped) or "")


def test_the_handover_round_may_set_its_own_reply_settings_and_nothing_else() -> None:
    """It goes with its own stream and output limit (``state.handover.own_settings``), which
    are not part of the prompt a provider caches; any other request changing them, or the
    handover changing anything else, still breaks the prefix."""
    handover = user(HANDOVER_HEADING + " Every turn but the newest few ...")
    asked = {"stream": True, "max_output_tokens": 40}
    first = responses(0, [user("task"), call("a"), output("a")], **asked)
    own = {"stream": False, "max_output_tokens": 8192}
    assert prefix_break(first, responses(1, [*first.json["input"], handover], **own)) is None
    unchanged = [user("task"), call("a"), output("a"), call("b"), output("b")]
    assert prefix_break(first, responses(1, unchanged, **own)) is not None
    other = {**own, "temperature": 0.1}
    assert prefix_break(first, responses(1, [*first.json["input"], handover], **other))
