"""``support.periodic.Periodic``: a step again and again, a pause before each, until closed or
until the step says no more; started again after it ended."""

from __future__ import annotations

import asyncio

from skillstate.support.periodic import Periodic


async def test_the_step_runs_until_it_says_no_more_then_can_start_again() -> None:
    runs: list[int] = []
    ended = asyncio.Event()

    async def step() -> bool:
        runs.append(len(runs))
        going = len(runs) not in (3, 4)
        if not going:
            ended.set()
        return going

    periodic = Periodic(0.001, step)
    periodic.start()
    periodic.start()  # running: left alone, not a second loop
    await asyncio.wait_for(ended.wait(), 5)
    await asyncio.sleep(0.01)
    assert runs == [0, 1, 2] and not periodic.running
    ended.clear()
    periodic.start()
    await asyncio.wait_for(ended.wait(), 5)
    await asyncio.sleep(0.01)
    assert runs == [0, 1, 2, 3] and not periodic.running
    await periodic.close()


async def test_close_stops_a_step_that_never_says_no_more() -> None:
    runs: list[None] = []
    twice = asyncio.Event()

    async def step() -> None:
        runs.append(None)
        if len(runs) == 2:
            twice.set()

    periodic = Periodic(0.001, step)
    periodic.start()
    await asyncio.wait_for(twice.wait(), 5)
    await periodic.close()
    seen = len(runs)
    await asyncio.sleep(0.01)
    assert len(runs) == seen and not periodic.running
