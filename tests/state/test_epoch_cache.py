"""The epochs a process keeps between requests (``state.epoch_cache``): alone on its store it
writes through and reads a session's epoch once; sharing the store with other gateways it
marks each epoch in Σ's meta and reads the store again only when the record's mark is not the
epoch it kept, so an epoch another gateway wrote is rendered from the next request on. Two
engines on one store stand for two processes."""

from __future__ import annotations

from read_loops import read_loop

from skillstate.conversation import Json, Wire
from skillstate.state.engine import StateEngine
from skillstate.state.epoch_cache import EPOCH_MARK, EpochCache, mark
from skillstate.state.epoch_record import DOC_NAME
from skillstate.state.mode import Mode
from skillstate.state.options import CollapseOptions
from skillstate.state.prepared import EngineConfig
from skillstate.state.schema import StateSchema
from skillstate.storage import MemoryArchiveStore, MemoryStateStore


class CountingStore(MemoryStateStore):
    """The in-memory store, counting the reads of epoch documents."""

    def __init__(self) -> None:
        super().__init__()
        self.epoch_reads = 0

    async def get_doc(self, session: str, name: str) -> Json | None:
        self.epoch_reads += name == DOC_NAME
        return await super().get_doc(session, name)


async def test_shared_an_epoch_is_read_again_only_when_its_mark_changes() -> None:
    store = CountingStore()
    one, two = (EpochCache(store, entries=8, max_bytes=1 << 20, shared=True) for _ in range(2))
    await one.put("s", {"number": 1})
    record = await store.load("s")
    assert record.meta[EPOCH_MARK] == mark({"number": 1})
    assert [await two.get("s", record) for _ in range(3)] == [{"number": 1}] * 3
    assert store.epoch_reads == 1  # read once, then kept while the mark holds
    await one.put("s", {"number": 2})
    assert await two.get("s", record) == {"number": 1}  # the request read Σ before the boundary
    assert await two.get("s", await store.load("s")) == {"number": 2}
    assert store.epoch_reads == 2
    await store.reset("s")
    assert await two.get("s", await store.load("s")) is None


async def test_alone_an_epoch_is_written_through_and_never_marked() -> None:
    store = CountingStore()
    cache = EpochCache(store, entries=8, max_bytes=1 << 20, shared=False)
    record = await store.load("s")
    assert await cache.get("s", record) is None
    await cache.put("s", {"number": 1})
    assert await cache.get("s", record) == {"number": 1}
    assert store.epoch_reads == 1 and (await store.load("s")).version == 0


async def test_two_shared_engines_render_the_epoch_either_made() -> None:
    store, archive = CountingStore(), MemoryArchiveStore()
    config = EngineConfig(schema=StateSchema.from_keys(None), options=CollapseOptions())
    engines = [StateEngine(store, archive, config, shared=True) for _ in range(2)]
    epochs: list[int | None] = []
    reads: list[int] = []
    for turns in range(1, 40):
        engine = engines[turns % 2]
        prepared = await engine.prepare("s", read_loop(turns), Mode.HYBRID, Wire.CHAT)
        assert prepared is not None
        await engine.finish(prepared, None)
        epochs.append(prepared.epoch.number if prepared.epoch else None)
        reads.append(store.epoch_reads)
        assert not engine.passing.passes("s", 1)  # shared: every request is the lane's
    made = sorted({n for n in epochs if n is not None})
    assert made and epochs[-1] == made[-1]
    first = epochs.index(made[0])
    assert all(n is not None for n in epochs[first:])  # each engine renders the other's
    # Reads: each engine's first request, then one per epoch made by the other engine
    # (its record's mark changed); never one a request.
    assert reads[-1] <= 2 + 2 * len(made) < len(epochs)
