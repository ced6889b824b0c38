"""The bounded map of the per-session caches: by count, by weight, least recently used first."""

from __future__ import annotations

import tracemalloc

import orjson

from skillstate.support.caches import SessionCache, compact


def _cache(entries: int = 3, max_bytes: int = 100) -> tuple[SessionCache[bytes], list[str]]:
    pushed: list[str] = []
    cache: SessionCache[bytes] = SessionCache(
        entries=entries, max_bytes=max_bytes, weigh=len, evicted=lambda s, _: pushed.append(s)
    )
    return cache, pushed


def test_it_keeps_at_most_its_count_the_least_recently_used_going_first() -> None:
    cache, pushed = _cache(entries=3)
    for name in ("a", "b", "c"):
        cache.put(name, b"x")
    assert cache.get("a") == b"x"  # a is used again: b is now the least recent
    cache.put("d", b"x")
    assert pushed == ["b"] and len(cache) == 3
    assert [s for s, _ in cache.items()] == ["c", "a", "d"]
    assert cache.get("b") is None


def test_it_keeps_at_most_its_bytes_and_counts_a_replaced_value_once() -> None:
    cache, pushed = _cache(entries=100, max_bytes=100)
    for n in range(10):
        cache.put(f"s{n}", b"x" * 30)
    assert len(cache) == 3 and cache.bytes == 90
    assert pushed == [f"s{n}" for n in range(7)]
    cache.put("s9", b"x" * 50)  # 50 in place of 30: s7 goes, s8 and s9 stay
    assert pushed[-1] == "s7" and cache.bytes == 80 and cache.get("s9") == b"x" * 50


def test_a_value_over_the_bound_is_pushed_out_and_pop_tells_no_one() -> None:
    cache, pushed = _cache(max_bytes=10)
    cache.put("big", b"x" * 11)
    assert "big" not in cache and pushed == ["big"] and cache.bytes == 0
    cache.put("small", b"x")
    assert cache.pop("small") == b"x" and pushed == ["big"] and cache.bytes == 0
    assert cache.pop("small") is None


def test_compact_keeps_the_bytes_in_a_buffer_of_their_own_length() -> None:
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [compact(orjson.dumps({"n": n})) for n in range(100)]
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept[7] == b'{"n":7}'
    assert held < 100 * 200  # orjson's own output holds 4 KiB each
