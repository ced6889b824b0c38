"""``workers = N``: N gateway processes on one port, supervised.

The supervisor forks N workers; each runs the whole gateway (``gateway.serve``) on the same
host and port with ``SO_REUSEPORT``, so the kernel spreads connections over them. A worker that
dies (a crash, a SIGKILL) is started again; one that dies within ``QUICK_DEATH_S`` of its start
``QUICK_DEATHS`` times in a row stops the whole (something is wrong that a restart will not
mend). SIGTERM or SIGINT to the supervisor is passed to every worker, each drains its requests
in flight (``shutdown_timeout``) and stops; one that has not stopped ``KILL_GRACE_S`` after that
is killed. A supervisor killed outright leaves no worker behind: each sees its parent gone and
stops itself.

What the workers share is the store: SQLite under the data directory (its writers take turns,
``storage.sqlite``) or the PostgreSQL database of ``store``; each checks a session's epoch it
keeps against Σ's mark of it on every request (``StateEngine(shared=True)``,
``state.epoch_cache``). Rate limits and circuits are each worker's own unless ``redis`` is set.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
import time
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from typing import Any

from skillstate.config import Settings

log = logging.getLogger("skillstate.workers")

QUICK_DEATH_S = 2.0
"""A worker gone this soon after its start died quickly."""
QUICK_DEATHS = 5
"""Quick deaths in a row (of any worker) that stop the supervisor."""
KILL_GRACE_S = 5.0
"""Seconds past ``shutdown_timeout`` a stopping worker is given before it is killed."""


def supervise(settings: Settings) -> int:
    """Run ``settings.workers`` workers until SIGTERM or SIGINT; the exit status (0: stopped
    as asked, 1: the workers kept dying)."""
    logging.basicConfig(
        level=logging.DEBUG if settings.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    context = multiprocessing.get_context("fork")
    stopping = False

    def stop(signum: int, _frame: Any) -> None:
        nonlocal stopping
        stopping = True

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    workers: dict[int, tuple[BaseProcess, float]] = {}
    quick = 0
    try:
        for index in range(settings.workers):
            workers[index] = (_start(context, settings, index), time.monotonic())
        log.info(
            "skillstate: %d workers on http://%s:%d", settings.workers, settings.host, settings.port
        )
        while not stopping:
            wait([process.sentinel for process, _ in workers.values()], timeout=0.5)
            for index, (process, started) in list(workers.items()):
                if process.is_alive() or stopping:
                    continue
                lived = time.monotonic() - started
                quick = quick + 1 if lived < QUICK_DEATH_S else 0
                log.warning(
                    "worker %d (pid %s) exited with %s after %.1fs: starting it again",
                    index,
                    process.pid,
                    process.exitcode,
                    lived,
                )
                if quick >= QUICK_DEATHS:
                    log.error("workers died %d times in a row on start: stopping", quick)
                    return 1
                workers[index] = (_start(context, settings, index), time.monotonic())
        log.info("stopping %d workers", len(workers))
        return 0
    finally:
        _stop_all([process for process, _ in workers.values()], settings.shutdown_timeout)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _start(context: Any, settings: Settings, index: int) -> BaseProcess:
    process: BaseProcess = context.Process(
        target=_worker, args=(settings,), name=f"skillstate-worker-{index}", daemon=False
    )
    process.start()
    return process


def _worker(settings: Settings) -> None:
    """A worker's life: the gateway on the shared port until SIGTERM."""
    import asyncio

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)  # the gateway's own loop handles them from here
    _stop_with_parent(os.getppid())
    from skillstate.gateway import serve
    from skillstate.support.eventloop import new_loop

    with asyncio.Runner(loop_factory=new_loop) as runner:
        runner.run(serve(settings, reuse_port=True))


def _stop_with_parent(parent: int) -> None:
    """A worker whose supervisor is gone (killed, so it could not stop its workers) stops
    itself: a thread looks every second and sends this process SIGTERM (it drains first)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="skillstate-parent-watch", daemon=True).start()


def _stop_all(processes: list[BaseProcess], drain_s: float) -> None:
    for process in processes:
        if process.is_alive():
            process.terminate()
    deadline = time.monotonic() + drain_s + KILL_GRACE_S
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            log.warning("worker pid %s did not stop in time: killed", process.pid)
            process.kill()
            process.join(1.0)
