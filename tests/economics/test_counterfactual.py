"""The pass-through counterfactual's cache rule: automatic prefix caching in 128-token steps
from 1,024 tokens, and explicit breakpoints with reads, writes, lookback and TTLs."""

from __future__ import annotations

import gc
import tracemalloc

from skillstate.conversation import CacheMark, Message, Request, Text, Wire
from skillstate.conversation.prefixes import PrefixMemo
from skillstate.economics import tokenizer
from skillstate.economics.counterfactual import (
    AUTOMATIC_MIN,
    Blocks,
    PassThroughCache,
    blocks_of,
    calibration,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def _text(n: int, words: int = 400) -> str:
    return " ".join(f"w{n}x{i}" for i in range(words))


def _request(texts: list[str], marks: dict[int, str | None] | None = None) -> Request:
    marks = marks or {}
    messages = [
        Message(
            "user" if i % 2 == 0 else "assistant",
            [Text(t, cache=CacheMark(marks[i]) if i in marks else None)],
        )
        for i, t in enumerate(texts)
    ]
    return Request(model="m", messages=messages, source=Wire.CHAT)


def test_blocks_total_is_the_local_count_of_the_request() -> None:
    request = _request([_text(1), _text(2)])
    request.system = [Text("you are careful")]
    assert blocks_of(request).total == tokenizer.count_request(request)


def test_automatic_caching_reads_the_common_prefix_in_128_token_steps() -> None:
    cache = PassThroughCache(clock=Clock())
    first = _request([_text(1), _text(2), _text(3)])
    assert cache.estimate("s", blocks_of(first), explicit=False, ratio=1.0).cached == 0
    second = _request([_text(1), _text(2), _text(3), _text(4)])
    got = cache.estimate("s", blocks_of(second), explicit=False, ratio=1.0)
    prefix = blocks_of(first).total
    assert prefix >= AUTOMATIC_MIN
    assert got.cached == prefix // 128 * 128
    assert got.input == blocks_of(second).total


def test_automatic_caching_stops_at_the_first_change_and_needs_1024_tokens() -> None:
    cache = PassThroughCache(clock=Clock())
    cache.estimate("s", blocks_of(_request([_text(1), _text(2)])), explicit=False, ratio=1.0)
    changed = _request([_text(1), _text(9), _text(3)])
    got = cache.estimate("s", blocks_of(changed), explicit=False, ratio=1.0)
    assert got.cached == blocks_of(_request([_text(1)])).ends[1] // 128 * 128
    short = PassThroughCache(clock=Clock())
    small = _request(["hello there"])
    short.estimate("t", blocks_of(small), explicit=False, ratio=1.0)
    assert short.estimate("t", blocks_of(small), explicit=False, ratio=1.0).cached == 0


def test_automatic_caching_is_per_session_and_expires() -> None:
    clock = Clock()
    cache = PassThroughCache(clock=clock)
    request = _request([_text(1), _text(2), _text(3)])
    cache.estimate("a", blocks_of(request), explicit=False, ratio=1.0)
    assert cache.estimate("b", blocks_of(request), explicit=False, ratio=1.0).cached == 0
    clock.now += 3_600
    assert cache.estimate("a", blocks_of(request), explicit=False, ratio=1.0).cached == 0


def test_the_ratio_calibrates_local_counts_to_the_providers() -> None:
    cache = PassThroughCache(clock=Clock())
    request = _request([_text(1), _text(2), _text(3)])
    cache.estimate("s", blocks_of(request), explicit=False, ratio=1.5)
    got = cache.estimate("s", blocks_of(request), explicit=False, ratio=1.5)
    assert got.input == round(blocks_of(request).total * 1.5)
    assert calibration(150, 100) == 1.5
    assert calibration(0, 100) == 1.0 and calibration(10, 0) == 1.0


def test_explicit_caching_without_breakpoints_caches_nothing() -> None:
    cache = PassThroughCache(clock=Clock())
    request = _request([_text(1), _text(2), _text(3)])
    for _ in range(3):
        got = cache.estimate("s", blocks_of(request), explicit=True, ratio=1.0)
        assert (got.cached, got.written) == (0, 0)


def test_explicit_caching_writes_at_the_breakpoint_then_reads_it() -> None:
    cache = PassThroughCache(clock=Clock())
    first = _request([_text(1), _text(2), _text(3)], {1: None})
    blocks = blocks_of(first)
    got = cache.estimate("s", blocks, explicit=True, ratio=1.0)
    assert (got.cached, got.written) == (0, blocks.ends[2])  # head + two messages
    # The client moves its breakpoint to the newest message: the old prefix is read, the new
    # part written.
    second = _request([_text(1), _text(2), _text(3), _text(4)], {3: None})
    blocks2 = blocks_of(second)
    got = cache.estimate("s", blocks2, explicit=True, ratio=1.0)
    assert got.cached == blocks.ends[2]
    assert got.written == blocks2.ends[4] - blocks.ends[2]


def test_explicit_lookback_is_20_blocks() -> None:
    texts = [_text(i, 60) for i in range(30)]
    cache = PassThroughCache(clock=Clock())
    cache.estimate("s", blocks_of(_request(texts[:5], {4: None})), explicit=True, ratio=1.0)
    near = _request(texts[:24], {23: None})  # the breakpoint sits 19 blocks past the entry
    assert cache.estimate("s", blocks_of(near), explicit=True, ratio=1.0).cached > 0
    far = PassThroughCache(clock=Clock())
    far.estimate("s", blocks_of(_request(texts[:5], {4: None})), explicit=True, ratio=1.0)
    beyond = _request(texts[:27], {26: None})  # 22 blocks past: out of the lookback
    assert far.estimate("s", blocks_of(beyond), explicit=True, ratio=1.0).cached == 0


def test_explicit_entries_expire_after_five_minutes_unless_one_hour() -> None:
    clock = Clock()
    cache = PassThroughCache(clock=clock)
    request = _request([_text(1), _text(2), _text(3)], {2: None})
    cache.estimate("s", blocks_of(request), explicit=True, ratio=1.0)
    clock.now += 301
    assert cache.estimate("s", blocks_of(request), explicit=True, ratio=1.0).cached == 0
    hour = PassThroughCache(clock=clock)
    marked = _request([_text(1), _text(2), _text(3)], {2: "1h"})
    got = hour.estimate("s", blocks_of(marked), explicit=True, ratio=1.0)
    assert got.written_1h == got.written > 0
    clock.now += 1_800
    assert hour.estimate("s", blocks_of(marked), explicit=True, ratio=1.0).cached > 0


def test_the_blocks_of_a_re_sent_history_are_those_of_the_whole_request() -> None:
    """A request that extends an earlier one with the same message objects takes the earlier
    blocks and computes only the new ones: the result is the blocks of the whole request."""
    import copy

    from skillstate.conversation import CacheMark, Message, Request, Text, Wire
    from skillstate.economics.counterfactual import blocks_of

    history = [Message("user", [Text("task")])]
    for n in range(30):
        marked = Text(f"step {n} " * 20, cache=CacheMark() if n % 7 == 0 else None)
        history.append(Message("assistant" if n % 2 else "user", [marked]))
        request = Request("m", list(history), Wire.MESSAGES, system=[Text("sys")])
        assert blocks_of(request) == blocks_of(copy.deepcopy(request))


def test_a_changed_marker_on_the_system_prompt_is_read_from_this_request() -> None:
    import copy

    from skillstate.conversation import CacheMark, Message, Request, Text, Wire
    from skillstate.economics.counterfactual import blocks_of

    history = [Message("user", [Text(f"step {n} " * 20)]) for n in range(70)]
    marked = Request("m", history, Wire.MESSAGES, system=[Text("sys", cache=CacheMark())])
    blocks_of(marked)
    unmarked = Request("m", [*history, Message("user", [Text("more")])], Wire.MESSAGES)
    unmarked.system = [Text("sys")]
    assert blocks_of(unmarked) == blocks_of(copy.deepcopy(unmarked))
    assert all(block != 0 for block, _ in blocks_of(unmarked).marks)


def test_the_sessions_kept_are_bounded_by_bytes_the_oldest_estimated_cold() -> None:
    request = _request([_text(1), _text(2), _text(3)])
    for bound, cached in ((1_000_000, True), (600, False)):
        cache = PassThroughCache(clock=Clock(), max_bytes=bound)
        for session in ("a", "b", "c"):
            cache.estimate(session, blocks_of(request), explicit=False, ratio=1.0)
        again = cache.estimate("a", blocks_of(request), explicit=False, ratio=1.0)
        assert (again.cached > 0) is cached


def test_a_session_keeps_its_previous_request_s_hashes_within_their_weight() -> None:
    """What a session's entry holds once its request is gone is its chain of hashes (8 bytes a
    block), no more than the bound weighs it at."""
    request = _request([f"message {n}" for n in range(1000)])
    tokenizer.count_request(request)  # the counts kept on the messages are not the cache's
    cache = PassThroughCache(clock=Clock())
    unkept: PrefixMemo[Blocks] = PrefixMemo(min_messages=10**9)  # no memo keeps the blocks
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        cache.estimate("s", blocks_of(request, unkept), explicit=False, ratio=1.0)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held <= 512 + 9 * 1001
