"""A step run again and again in a background task, a pause before each, off the request path:
the key ring's refresh, the shared circuits' sync, a failed store's retries."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable


class Periodic:
    """``step`` every ``seconds`` from ``start`` until ``close``, or until ``step`` answers
    False (None and True go on). A step that raises ends the task (its owner's step catches
    what it expects)."""

    def __init__(self, seconds: float, step: Callable[[], Awaitable[bool | None]]) -> None:
        self.seconds = seconds
        self._step = step
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Begin (again, if it had ended); a loop already running is left alone."""
        if not self.running:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def close(self) -> None:
        """Stop, and wait for the task to be gone."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.seconds)
            if await self._step() is False:
                return
