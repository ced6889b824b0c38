"""``conversation.prefixes.PrefixMemo``: a value over a conversation's messages, found again by
a later request that starts with the very same message objects."""

from __future__ import annotations

import copy
import gc
import weakref

from skillstate.conversation import Message, Text
from skillstate.conversation.prefixes import PrefixMemo


def conversation(n: int) -> list[Message]:
    return [Message("user", [Text(f"message {i}")]) for i in range(n)]


def test_a_longer_conversation_of_the_same_objects_finds_what_was_kept() -> None:
    memo: PrefixMemo[str] = PrefixMemo(min_messages=1)
    messages = conversation(5)
    memo.keep(messages[:3], "three")
    assert memo.find(messages) == (3, "three")
    assert memo.find(messages[:2]) is None  # shorter than what was kept


def test_equal_objects_are_not_the_same_conversation() -> None:
    memo: PrefixMemo[str] = PrefixMemo(min_messages=1)
    messages = conversation(3)
    memo.keep(messages, "kept")
    assert memo.find(copy.deepcopy(messages)) is None
    changed = [messages[0], Message("user", [Text("other")]), messages[2]]
    assert memo.find(changed) is None


def test_a_short_conversation_is_not_remembered() -> None:
    memo: PrefixMemo[str] = PrefixMemo(min_messages=4)
    short = conversation(3)
    memo.keep(short, "short")
    assert memo.find(short) is None and len(memo) == 0


def test_the_memo_keeps_no_message_alive_and_is_bounded() -> None:
    memo: PrefixMemo[int] = PrefixMemo(max_messages=10, min_messages=1)
    kept = [conversation(4) for _ in range(4)]
    for n, messages in enumerate(kept):
        memo.keep(messages, n)
    assert len(memo) == 2  # 16 messages over a bound of 10: the oldest two dropped
    assert memo.find(kept[0]) is None and memo.find(kept[3]) == (4, 3)
    gone = conversation(2)
    memo.keep(gone, 9)
    alive = weakref.ref(gone[0])
    del gone
    gc.collect()
    assert alive() is None


def test_a_conversation_whose_messages_are_gone_is_dropped_before_the_bound() -> None:
    memo: PrefixMemo[list[int]] = PrefixMemo(min_messages=1)
    older = conversation(3)
    memo.keep(older, [0])  # still alive, and older than the one that goes
    gone = conversation(3)
    memo.keep(gone, [1, 2, 3])
    del gone
    gc.collect()
    live = conversation(3)
    memo.keep(live, [4])
    assert len(memo) == 2 and memo.find(live) == (3, [4]) and memo.find(older) == (3, [0])
