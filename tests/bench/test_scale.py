"""The scale benchmark runs end to end, small: the provider alone and one gateway process on
each store, then two workers on SQLite, every cell served (its figures are the benchmark's to
print, not this test's to judge)."""

from __future__ import annotations

from skillstate.bench.scale import measure


async def test_the_scale_benchmark_measures_every_cell(postgres_url: str) -> None:
    rows = await measure([1, 2], ["sqlite", "postgresql"], 0.5, 4, "redis://127.0.0.1:6379/0")
    assert [r.arm for r in rows] == [
        "direct",
        "sqlite x1",
        "sqlite x2",
        "postgresql x1",
        "postgresql x2",
    ]
    assert all(r.requests > 0 and r.rps > 0 for r in rows)
    assert all(r.cpu_ms is not None and r.cpu_ms > 0 for r in rows[1:])
