"""Decoding a session's history once (``protocols.memo``): the messages a client re-sends are
the same canonical objects as last time, decoded only once; anything else decodes afresh."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from skillstate.conversation import Wire
from skillstate.protocols import adapter
from skillstate.protocols.memo import ItemMemo, SessionMemos


def chat(turns: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Read the stages."}]
    for n in range(turns):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": f"stage {n}"})
    return {"model": "m", "messages": messages}


def messages(turns: int) -> dict[str, Any]:
    items: list[dict[str, Any]] = [{"role": "user", "content": "Read the stages."}]
    for n in range(turns):
        use = {"type": "tool_use", "id": f"c{n}", "name": "read", "input": {}}
        items.append({"role": "assistant", "content": [use]})
        result = {"type": "tool_result", "tool_use_id": f"c{n}", "content": f"stage {n}"}
        items.append({"role": "user", "content": [result]})
    return {"model": "m", "max_tokens": 10, "messages": items}


BODIES = {Wire.CHAT: chat, Wire.MESSAGES: messages}


def decode(wire: Wire, body: dict[str, Any], memo: ItemMemo) -> Any:
    memo.start()
    request = adapter(wire).decode_request(copy.deepcopy(body), memo)  # a fresh parse
    memo.finish(1_000)
    return request


@pytest.mark.parametrize("wire", list(BODIES))
def test_a_resent_history_is_decoded_once_and_only_the_new_turns_after(wire: Wire) -> None:
    memo = ItemMemo()
    first = decode(wire, BODIES[wire](3), memo)
    assert (memo.reused, memo.fresh) == (0, 7)
    second = decode(wire, BODIES[wire](5), memo)
    assert (memo.reused, memo.fresh) == (7, 4)  # work grows with what is new, not history
    assert all(a is b for a, b in zip(first.messages, second.messages[:7], strict=True))
    assert second == adapter(wire).decode_request(BODIES[wire](5))  # the same request


@pytest.mark.parametrize("wire", list(BODIES))
def test_an_edited_message_is_decoded_again_and_the_others_are_kept(wire: Wire) -> None:
    memo = ItemMemo()
    decode(wire, BODIES[wire](3), memo)
    edited = BODIES[wire](3)
    edited["messages"][2] = copy.deepcopy(edited["messages"][2])
    middle = edited["messages"][2]
    if wire is Wire.CHAT:
        middle["content"] = "stage 0, edited"
    else:
        middle["content"][0]["content"] = "stage 0, edited"
    again = decode(wire, edited, memo)
    assert (memo.reused, memo.fresh) == (6, 1)
    assert again == adapter(wire).decode_request(edited)
    # Another first item is another conversation of the session: decoded whole.
    other = BODIES[wire](3)
    other["messages"][0]["content"] = "Another task."
    decode(wire, other, memo)
    assert (memo.reused, memo.fresh) == (0, 7)


def test_a_refused_body_leaves_the_previous_messages_in_place() -> None:
    memo = ItemMemo()
    decode(Wire.CHAT, chat(2), memo)
    broken = chat(3)
    broken["messages"][-1] = {"role": "nobody"}
    memo.start()
    with pytest.raises(Exception, match="role"):
        adapter(Wire.CHAT).decode_request(broken, memo)
    memo.abort()
    decode(Wire.CHAT, chat(3), memo)
    assert (memo.reused, memo.fresh) == (5, 2)


def _decoded_into(memos: SessionMemos, session: str, body: dict[str, Any], size: int) -> ItemMemo:
    memo = memos.get(session)
    memo.start()
    adapter(Wire.CHAT).decode_request(copy.deepcopy(body), memo)
    memos.finish(session, memo, size)
    return memo


def test_the_memos_are_bounded_by_the_bytes_of_their_bodies() -> None:
    memos = SessionMemos(max_bytes=1_000, min_bytes=100)
    for n in range(5):
        _decoded_into(memos, f"s{n}", chat(2), 400)
    assert len(memos) == 2 and memos.held_bytes == 800
    assert _decoded_into(memos, "s0", chat(2), 400).reused == 0  # evicted: afresh
    _decoded_into(memos, "tiny", chat(2), 50)
    assert "tiny" not in memos._memos  # a short body is not kept
    _decoded_into(memos, "huge", chat(2), 5_000)
    assert len(memos) == 1 and memos.held_bytes == 5_000  # kept alone, the others dropped


def test_a_side_request_of_the_session_does_not_wipe_its_main_conversation() -> None:
    """A title request or a subagent shares the session id: its own first item keeps it
    apart, and the main loop's next request still finds its history."""
    memos = SessionMemos(min_bytes=0)
    _decoded_into(memos, "s", chat(4), 500)
    side = {"model": "m", "messages": [{"role": "user", "content": "Title this session."}]}
    _decoded_into(memos, "s", side, 10)
    again = _decoded_into(memos, "s", chat(5), 600)
    assert (again.reused, again.fresh) == (9, 2)


# --- the Responses wire: items decoded in groups (one assistant turn is a run of items) ----

ITEM_KINDS = {
    "user": {"role": "user", "content": "next"},
    "reasoning": {"type": "reasoning", "id": "rs", "summary": []},
    "text": {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "so"}],
    },
    "call": {"type": "function_call", "call_id": "c", "name": "read", "arguments": "{}"},
    "output": {"type": "function_call_output", "call_id": "c", "output": "done"},
}


def responses(kinds: list[str]) -> dict[str, Any]:
    items = []
    for n, kind in enumerate(kinds):
        item = copy.deepcopy(ITEM_KINDS[kind])
        if kind in ("call", "output"):
            item["call_id"] = f"c{n if kind == 'call' else n - 1}"
        if kind == "user":
            item["content"] = f"step {n}"
        items.append(item)
    return {"model": "m", "input": [{"role": "user", "content": "Start."}, *items]}


def test_a_grown_responses_input_reuses_its_closed_messages_and_goes_on_with_the_last() -> None:
    memo = ItemMemo()
    first = decode(Wire.RESPONSES, responses(["reasoning", "call", "output", "reasoning"]), memo)
    grown = ["reasoning", "call", "output", "reasoning", "call", "output", "user"]
    second = decode(Wire.RESPONSES, responses(grown), memo)
    assert second.messages == adapter(Wire.RESPONSES).decode_request(responses(grown)).messages
    assert second.messages[1] is first.messages[1]  # the first turn, closed by its output
    # The last turn had one item; the next request's call joins it: decoded again, whole.
    assert second.messages[3] is not first.messages[3]
    assert len(second.messages[3].parts) == 2


def test_a_responses_message_the_next_items_do_not_join_is_the_very_same_object() -> None:
    """Without it the last message of every request is new to everything downstream, which
    tells a re-sent history by identity: the whole history would be segmented again."""
    memo = ItemMemo()
    first = decode(Wire.RESPONSES, responses(["reasoning", "call", "output"]), memo)
    grown = ["reasoning", "call", "output", "reasoning", "call", "output"]
    second = decode(Wire.RESPONSES, responses(grown), memo)
    assert all(a is b for a, b in zip(first.messages, second.messages, strict=False))
    assert (memo.reused, memo.fresh) == (3, 2)
    calls = ["reasoning", "call"]
    fourth = decode(Wire.RESPONSES, responses(calls), memo)
    parallel = [*calls, "call", "output"]  # a second call joins the run: it went on
    fifth = decode(Wire.RESPONSES, responses(parallel), memo)
    assert fifth.messages[1] is not fourth.messages[1]
    assert len(fifth.messages[1].parts) == 3
    assert fifth.messages == adapter(Wire.RESPONSES).decode_request(responses(parallel)).messages


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

KINDS = st.lists(st.sampled_from(sorted(ITEM_KINDS)), max_size=12)


@settings(max_examples=150, deadline=None)
@given(first=KINDS, cut=st.integers(0, 12), added=KINDS)
def test_any_responses_input_decodes_through_the_memo_as_it_does_whole(
    first: list[str], cut: int, added: list[str]
) -> None:
    memo = ItemMemo()
    for kinds in (first, first[:cut] + added, first[:cut] + added):
        through = decode(Wire.RESPONSES, responses(kinds), memo)
        whole = adapter(Wire.RESPONSES).decode_request(responses(kinds))
        assert through.messages == whole.messages
